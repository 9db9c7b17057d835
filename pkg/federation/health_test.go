package federation

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/fedirl/fedirl/proto"
)

// TestHealthService: the standard health client (as grpc_health_probe uses
// it) reports SERVING for the server and the Federation service, and
// NOT_SERVING once the coordinator has stopped.
func TestHealthService(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	addr := serve(t, f, GRPCServerConfig{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, svc := range []string{"", pb.Federation_ServiceDesc.ServiceName} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q: %v, %v", svc, r.GetStatus(), err)
		}
	}
	f.coord.Close()
	eventually(t, "NOT_SERVING after shutdown", func() bool {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
	})
}
