package federation

import (
	"log/slog"

	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/fedirl/fedirl/pkg/privacy"
	pb "github.com/fedirl/fedirl/proto"
)

// DefaultMaxMessageBytes is the default limit on one gRPC message (1 MiB):
// enough for θ of MaxThetaDim doubles, small enough to bound hostile input.
const DefaultMaxMessageBytes = 1 << 20

// GRPCServerConfig configures the gRPC adapter. Zero values are documented defaults.
type GRPCServerConfig struct {
	// TLS is the server's TLS configuration; nil serves plaintext (loopback
	// quick start only). Set ClientAuth to tls.RequireAndVerifyClientCert for
	// mutual TLS; the client certificate's common name must then equal the
	// client id a request acts as.
	TLS *tls.Config
	// MaxMessageBytes caps each received message (default DefaultMaxMessageBytes).
	MaxMessageBytes int
	// MaxConcurrentStreams caps concurrent calls per connection (default
	// 16: a client makes one call at a time).
	MaxConcurrentStreams uint32
	// Log receives the audit log (structured records of every refused
	// connection and call, rate-limited; see AuditLog) when Audit is nil;
	// nil discards them.
	Log *slog.Logger
	// Audit is the audit log to write to (shared with a ConnLimiter); nil
	// makes one on Log with the default rate limit.
	Audit *AuditLog
	// Conns, when the server serves a ConnLimiter, lets eviction spare
	// connections that completed an authenticated call.
	Conns *ConnLimiter
	// MaxConnectionAge closes every connection after this long (default 10
	// min, with a minute's grace for calls in flight); clients reconnect
	// transparently.
	MaxConnectionAge time.Duration
	// RequestReadTimeout is how long a call may take from its headers to
	// its complete request message (default DefaultRequestReadTimeout);
	// a call still unfinished then is cancelled and its buffers freed.
	RequestReadTimeout time.Duration
	// MaxTokenlessCalls caps the calls in flight that carry no known token
	// other than health Checks (health Watch and List streams, and Status
	// or CreateTask on a server without an admin token); default
	// DefaultMaxTokenlessCalls. Further ones are refused at their headers
	// with ResourceExhausted, naming the peer that holds the most.
	MaxTokenlessCalls int
	// MaxChecksPerPeer caps the health Checks one peer (as ConnLimiter
	// counts peers) has in flight (default DefaultMaxChecksPerPeer). Checks
	// have no server-wide budget, so a Check from a peer that holds none
	// is always admitted: watchers and other peers cannot starve it.
	MaxChecksPerPeer int
	// MaxWatchesPerPeer caps the health Watch streams one peer holds
	// (default DefaultMaxWatchesPerPeer); they also count against
	// MaxTokenlessCalls.
	MaxWatchesPerPeer int
	// WatchLifetime ends every health Watch after this long (default
	// DefaultWatchLifetime); a load balancer re-opens it.
	WatchLifetime time.Duration
	// MaxCallsPerClient caps the calls one client id (one client of one
	// task, or the admin token) has in flight across all its connections
	// (default DefaultMaxCallsPerClient); further ones are refused at their
	// headers with ResourceExhausted naming the client.
	MaxCallsPerClient int
}

// Defaults of GRPCServerConfig.
const (
	// DefaultRequestReadTimeout is the default of RequestReadTimeout.
	DefaultRequestReadTimeout = 10 * time.Second
	// DefaultMaxTokenlessCalls is the default of MaxTokenlessCalls.
	DefaultMaxTokenlessCalls = 64
	// TokenlessReadTimeout bounds RequestReadTimeout for token-less calls:
	// their requests (a health service name) come with their headers, and
	// the request bytes a token-less peer can make the server hold (up to
	// MaxMessageBytes per call) are held at most this long.
	TokenlessReadTimeout = 2 * time.Second
	// DefaultMaxChecksPerPeer is the default of MaxChecksPerPeer.
	DefaultMaxChecksPerPeer = 4
	// DefaultMaxWatchesPerPeer is the default of MaxWatchesPerPeer.
	DefaultMaxWatchesPerPeer = 2
	// DefaultWatchLifetime is the default of WatchLifetime.
	DefaultWatchLifetime = 5 * time.Minute
	// DefaultMaxCallsPerClient is the default of MaxCallsPerClient: fedirl
	// client makes one call at a time.
	DefaultMaxCallsPerClient = 8
	// MaxHandshakeBytes is the most a peer may send before its TLS
	// handshake completes (ClientHello, and under mutual TLS its
	// certificate chain): fedirl's hellos and certificates take a few KiB;
	// crypto/tls alone would buffer a 256 KiB certificate message.
	MaxHandshakeBytes = 32 << 10
	// MaxHeaderListBytes is the largest header list (HPACK-decoded, as
	// HTTP/2 counts it: name + value + 32 bytes per field) the server
	// accepts for one call, advertised in its SETTINGS: fedirl's metadata
	// (a 71-byte bearer token, grpc's own headers, a user agent) takes
	// under 1 KiB. Fields beyond it are decoded but not kept, the call is
	// reset, and a CONTINUATION frame after the limit closes the
	// connection (golang.org/x/net/http2), so a header block cannot make
	// the server hold more than this before the token check. grpc's
	// default is 16 MiB.
	MaxHeaderListBytes = 8 << 10
	// streamWindow is every stream's HTTP/2 flow-control window (grpc's
	// minimum; a fixed value also turns off grpc's window growth): the
	// most a peer can make the server buffer for one call before its
	// request is read.
	streamWindow = 64 << 10
)

// NewGRPCServer returns a gRPC server exposing c as the Federation service.
//
// Calls are screened at their headers, before any request byte is read:
// a Federation call must carry a bearer token that is the admin token or a
// client token of some task (refused with Unauthenticated otherwise), and
// token-less calls are budgeted (health Checks per peer, Watch streams per
// peer and in lifetime, all other token-less calls at MaxTokenlessCalls in
// flight). Every admitted call must deliver its whole request within
// RequestReadTimeout. Header lists are capped at MaxHeaderListBytes and TLS
// handshakes at MaxHandshakeBytes. Refusals go to the audit log.
func NewGRPCServer(c *Coordinator, cfg GRPCServerConfig) *grpc.Server {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxConcurrentStreams == 0 {
		cfg.MaxConcurrentStreams = 16
	}
	if cfg.MaxConnectionAge <= 0 {
		cfg.MaxConnectionAge = 10 * time.Minute
	}
	if cfg.RequestReadTimeout <= 0 {
		cfg.RequestReadTimeout = DefaultRequestReadTimeout
	}
	if cfg.MaxTokenlessCalls <= 0 {
		cfg.MaxTokenlessCalls = DefaultMaxTokenlessCalls
	}
	if cfg.MaxChecksPerPeer <= 0 {
		cfg.MaxChecksPerPeer = DefaultMaxChecksPerPeer
	}
	if cfg.MaxWatchesPerPeer <= 0 {
		cfg.MaxWatchesPerPeer = DefaultMaxWatchesPerPeer
	}
	if cfg.WatchLifetime <= 0 {
		cfg.WatchLifetime = DefaultWatchLifetime
	}
	if cfg.MaxCallsPerClient <= 0 {
		cfg.MaxCallsPerClient = DefaultMaxCallsPerClient
	}
	if cfg.Audit == nil {
		cfg.Audit = NewAuditLog(cfg.Log, 0, 0)
	}
	g := &gate{c: c, cfg: cfg, checks: map[string]int{}, tokenlessBy: map[string]int{}, watches: map[string]int{}, callsBy: map[string]int{}}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.MaxSendMsgSize(4 * cfg.MaxMessageBytes),
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
		grpc.MaxHeaderListSize(MaxHeaderListBytes),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(int32(cfg.MaxConcurrentStreams) * streamWindow),
		// Per-connection buffers: the write buffer is taken from a pool
		// only while writing, the read buffer is 8 KiB instead of 32 KiB
		// (requests are small); an idle or stalled connection then costs
		// a few tens of kB instead of ≈ 64 kB plus its goroutines.
		grpc.SharedWriteBuffer(true),
		grpc.ReadBufferSize(8 << 10),
		grpc.InTapHandle(g.tap),
		grpc.StatsHandler(g),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(auditedCreds{credentials.NewTLS(cfg.TLS), cfg.Audit, cfg.Conns}))
	}
	opts = append(opts,
		// Peers that never finish a TLS handshake, idle connections and
		// clients pinging too often are dropped instead of holding memory.
		grpc.ConnectionTimeout(10*time.Second),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute, Time: 2 * time.Minute, Timeout: 20 * time.Second,
			MaxConnectionAge: cfg.MaxConnectionAge, MaxConnectionAgeGrace: time.Minute}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
	s := grpc.NewServer(opts...)
	pb.RegisterFederationServer(s, &grpcService{c: c, maxReply: 4 * cfg.MaxMessageBytes, conns: cfg.Conns, audit: cfg.Audit})
	// The standard health service (grpc.health.v1), for load balancers and
	// grpc_health_probe: SERVING for the server ("") and the Federation
	// service until the coordinator stops.
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(pb.Federation_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	go cfg.Audit.run(10*time.Second, c.stop)
	go func() {
		<-c.stop
		hs.Shutdown() // NOT_SERVING for every service
	}()
	return s
}

// grpcService adapts Coordinator to the generated FederationServer interface.
type grpcService struct {
	pb.UnimplementedFederationServer
	c        *Coordinator
	maxReply int          // the server's send limit (grpc.MaxSendMsgSize)
	conns    *ConnLimiter // closes a revoked client's connections (nil: none accounted)
	audit    *AuditLog
}

// tokensReplyBound bounds the encoded size of a CreateTask reply for
// clients: per map entry the id, a 64-character token and at most 8 bytes of
// tags and lengths.
func tokensReplyBound(clients []string) int {
	n := 0
	for _, c := range clients {
		n += len(c) + 64 + 8
	}
	return n
}

// credentialsFrom extracts the bearer token and verified client certificate
// name of an incoming call.
func credentialsFrom(ctx context.Context) Credentials {
	var cred Credentials
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) == 1 {
			cred.Token, _ = strings.CutPrefix(v[0], "Bearer ")
		}
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
			cred.CertName = ti.State.VerifiedChains[0][0].Subject.CommonName
			if cred.CertName == "" {
				cred.CertName = "(certificate without common name)"
			}
		}
	}
	return cred
}

var toGRPCCode = map[Code]codes.Code{
	CodeInvalidArgument:    codes.InvalidArgument,
	CodeNotFound:           codes.NotFound,
	CodeAlreadyExists:      codes.AlreadyExists,
	CodePermissionDenied:   codes.PermissionDenied,
	CodeUnauthenticated:    codes.Unauthenticated,
	CodeFailedPrecondition: codes.FailedPrecondition,
	CodeResourceExhausted:  codes.ResourceExhausted,
	CodeUnavailable:        codes.Unavailable,
	CodeInternal:           codes.Internal,
}

// toStatus converts a federation error to a gRPC status error.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		if c, ok := toGRPCCode[fe.Code]; ok {
			return status.Error(c, fe.Msg)
		}
	}
	return status.Error(codes.Unknown, err.Error())
}

// fromStatus converts a gRPC error to a federation *Error. Transport
// failures (unreachable, timed-out attempt, aborted) become CodeUnavailable.
func fromStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable:
		if ce := permanentConnError(st.Message()); ce != nil {
			return ce // not retryable: RunClient stops at once
		}
	case codes.Canceled:
		return fmt.Errorf("%w: %s", context.Canceled, st.Message())
	case codes.DeadlineExceeded, codes.Aborted:
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s", ctx.Err(), st.Message())
		}
		return &Error{Code: CodeUnavailable, Msg: st.Message()}
	}
	for fc, gc := range toGRPCCode {
		if gc == st.Code() {
			return &Error{Code: fc, Msg: st.Message()}
		}
	}
	return &Error{Code: CodeUnknown, Msg: st.Code().String() + ": " + st.Message()}
}

func specToPB(s *TaskSpec) *pb.TaskSpec {
	return &pb.TaskSpec{
		Id: s.ID, Description: s.Description, EnvFamily: s.EnvFamily, Probe: s.Probe,
		ThetaDim: int32(s.ThetaDim), FeatureNames: s.FeatureNames,
		Irl: s.IRL, Fusion: s.Fusion,
		Quorum: int32(s.Quorum), MinClients: int32(s.MinClients), DeadlineSeconds: s.DeadlineSeconds,
		Rounds: int32(s.Rounds), WarmStart: s.WarmStart, MaxThetaNorm: s.MaxThetaNorm,
		Privacy: requirementToPB(s.Privacy), CentralPrivacy: centralToPB(s.CentralPrivacy), MaxRewardNorm: s.MaxRewardNorm,
	}
}

func centralToPB(c *privacy.Central) *pb.CentralPrivacy {
	if c == nil {
		return nil
	}
	return &pb.CentralPrivacy{Epsilon: c.Epsilon, Delta: c.Delta, Clip: c.Clip, Conversion: string(c.Conversion), Bound: c.Bound}
}

func centralFromPB(p *pb.CentralPrivacy) *privacy.Central {
	if p == nil {
		return nil
	}
	return &privacy.Central{Epsilon: p.GetEpsilon(), Delta: p.GetDelta(), Clip: p.GetClip(), Conversion: privacy.Conversion(p.GetConversion()), Bound: p.GetBound()}
}

func centralReleaseToPB(r *privacy.CentralRelease) *pb.CentralRelease {
	if r == nil {
		return nil
	}
	return &pb.CentralRelease{Epsilon: r.Epsilon, Delta: r.Delta, Clip: r.Clip, Sigma: r.Sigma,
		Rounds: int32(min(max(r.Rounds, math.MinInt32), math.MaxInt32)), Conversion: string(r.Conversion),
		Sensitivity: r.Sensitivity, NoiseStd: r.NoiseStd, Bound: r.Bound}
}

func centralReleaseFromPB(p *pb.CentralRelease) *privacy.CentralRelease {
	if p == nil {
		return nil
	}
	return &privacy.CentralRelease{Epsilon: p.GetEpsilon(), Delta: p.GetDelta(), Clip: p.GetClip(), Sigma: p.GetSigma(),
		Rounds: int(p.GetRounds()), Conversion: privacy.Conversion(p.GetConversion()), Sensitivity: p.GetSensitivity(), NoiseStd: p.GetNoiseStd(), Bound: p.GetBound()}
}

func requirementToPB(r *privacy.Requirement) *pb.PrivacyRequirement {
	if r == nil {
		return nil
	}
	return &pb.PrivacyRequirement{MaxEpsilon: r.MaxEpsilon, MaxDelta: r.MaxDelta, Clip: r.Clip, ClientClip: r.ClientClip}
}

func requirementFromPB(p *pb.PrivacyRequirement) *privacy.Requirement {
	if p == nil {
		return nil
	}
	return &privacy.Requirement{MaxEpsilon: p.GetMaxEpsilon(), MaxDelta: p.GetMaxDelta(), Clip: p.GetClip(), ClientClip: p.GetClientClip()}
}

func declarationToPB(d *privacy.Declaration) *pb.PrivacyDeclaration {
	if d == nil {
		return nil
	}
	return &pb.PrivacyDeclaration{Epsilon: d.Epsilon, Delta: d.Delta, Clip: d.Clip, Sigma: d.Sigma,
		Rounds: int32(min(max(d.Rounds, math.MinInt32), math.MaxInt32)), Conversion: string(d.Conversion)}
}

func declarationFromPB(p *pb.PrivacyDeclaration) *privacy.Declaration {
	if p == nil {
		return nil
	}
	return &privacy.Declaration{Epsilon: p.GetEpsilon(), Delta: p.GetDelta(), Clip: p.GetClip(), Sigma: p.GetSigma(),
		Rounds: int(p.GetRounds()), Conversion: privacy.Conversion(p.GetConversion())}
}

func specFromPB(p *pb.TaskSpec) TaskSpec {
	return TaskSpec{
		ID: p.GetId(), Description: p.GetDescription(), EnvFamily: p.GetEnvFamily(), Probe: p.GetProbe(),
		ThetaDim: int(p.GetThetaDim()), FeatureNames: p.GetFeatureNames(),
		IRL: p.GetIrl(), Fusion: p.GetFusion(),
		Quorum: int(p.GetQuorum()), MinClients: int(p.GetMinClients()), DeadlineSeconds: p.GetDeadlineSeconds(),
		Rounds: int(p.GetRounds()), WarmStart: p.GetWarmStart(), MaxThetaNorm: p.GetMaxThetaNorm(),
		Privacy: requirementFromPB(p.GetPrivacy()), CentralPrivacy: centralFromPB(p.GetCentralPrivacy()),
		MaxRewardNorm: p.GetMaxRewardNorm(),
	}
}

func fusedToPB(f *FusedResult) *pb.FusedResult {
	p := &pb.FusedResult{TaskId: f.TaskID, Round: int32(f.Round), Theta: f.Theta, Method: f.Method,
		Clients: f.Clients, Weights: f.Weights, MarginalError: f.MarginalError, Iterations: int32(f.Iterations),
		Trigger: f.Trigger, FusedUnixNano: f.FusedAt.UnixNano(), OutlierScores: f.OutlierScores, CentralPrivacy: centralReleaseToPB(f.Central),
		Reward: f.Reward, RewardClients: f.RewardClients, Warning: f.Warning}
	for i := range f.Privacy {
		p.Privacy = append(p.Privacy, declarationToPB(&f.Privacy[i]))
	}
	p.Joint = jointToPB(f.Joint)
	return p
}

func fusedFromPB(p *pb.FusedResult) FusedResult {
	if p == nil {
		return FusedResult{}
	}
	return FusedResult{TaskID: p.GetTaskId(), Round: int(p.GetRound()), Theta: p.GetTheta(), Method: p.GetMethod(),
		Clients: p.GetClients(), Weights: p.GetWeights(), MarginalError: p.GetMarginalError(),
		Iterations: int(p.GetIterations()), Trigger: p.GetTrigger(), FusedAt: time.Unix(0, p.GetFusedUnixNano()).UTC(),
		Privacy: declarationsFromPB(p.GetPrivacy()), OutlierScores: p.GetOutlierScores(), Central: centralReleaseFromPB(p.GetCentralPrivacy()),
		Reward: p.GetReward(), RewardClients: p.GetRewardClients(), Joint: jointFromPB(p.GetJoint()), Warning: p.GetWarning()}
}

func declarationsFromPB(ps []*pb.PrivacyDeclaration) []privacy.Declaration {
	if len(ps) == 0 {
		return nil
	}
	out := make([]privacy.Declaration, len(ps))
	for i, p := range ps {
		if d := declarationFromPB(p); d != nil {
			out[i] = *d
		}
	}
	return out
}

// GetTask implements pb.FederationServer.
func (s *grpcService) GetTask(ctx context.Context, req *pb.GetTaskRequest) (*pb.GetTaskResponse, error) {
	info, err := s.c.GetTask(ctx, credentialsFrom(ctx), req.GetTaskId(), req.GetClientId())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.GetTaskResponse{Spec: specToPB(&info.Spec), CurrentRound: int32(info.CurrentRound), Done: info.Done, WarmStart: info.WarmStart,
		Joint: info.Joint, Trial: info.Trial, JointUpdate: info.JointUpdate}, nil
}

// Submit implements pb.FederationServer.
func (s *grpcService) Submit(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	sub := Submission{TaskID: req.GetTaskId(), Round: int(req.GetRound()), ClientID: req.GetClientId(),
		Theta: req.GetTheta(), DemoCount: int(req.GetDemoCount()), Iterations: int(req.GetIterations()),
		GradNorm: req.GetGradNorm(), Privacy: declarationFromPB(req.GetPrivacy()), Reward: req.GetReward(), Eval: evalFromPB(req.GetEval()), Update: req.GetUpdate()}
	res, err := s.c.Submit(ctx, credentialsFrom(ctx), sub)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.SubmitResponse{Duplicate: res.Duplicate, Round: int32(res.Round), Submissions: int32(res.Submissions),
		Quorum: int32(res.Quorum), Message: res.Message, Privacy: declarationToPB(res.Privacy)}, nil
}

// GetFused implements pb.FederationServer.
func (s *grpcService) GetFused(ctx context.Context, req *pb.GetFusedRequest) (*pb.GetFusedResponse, error) {
	fs, err := s.c.GetFused(ctx, credentialsFrom(ctx), req.GetTaskId(), req.GetClientId(), int(req.GetRound()),
		time.Duration(req.GetWaitMs())*time.Millisecond)
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &pb.GetFusedResponse{Ready: fs.Ready, Submissions: int32(fs.Submissions), Quorum: int32(fs.Quorum),
		WaitingFor: fs.WaitingFor, WaitingForMore: int32(fs.WaitingForMore)}
	if fs.Ready {
		resp.Result = fusedToPB(&fs.Result)
	}
	return resp, nil
}

// Status implements pb.FederationServer: one page of the status
// (Coordinator.StatusPage), whose estimated size stays under half the
// server's send limit.
func (s *grpcService) Status(ctx context.Context, req *pb.StatusRequest) (*pb.StatusResponse, error) {
	sts, next, err := s.c.StatusPage(ctx, credentialsFrom(ctx), StatusQuery{Task: req.GetTaskId(), Client: req.GetClientId(),
		PageToken: req.GetPageToken(), PageSize: int(req.GetPageSize()), MaxBytes: s.maxReply / 2})
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &pb.StatusResponse{NextPageToken: next}
	for i := range sts {
		t := &sts[i]
		ps := &pb.TaskStatus{Id: t.ID, Round: int32(t.Round), Rounds: int32(t.Rounds), Done: t.Done, Quorum: int32(t.Quorum),
			MinClients: int32(t.MinClients), ClientsAllowed: t.ClientsAllowed, ClientsSeen: t.ClientsSeen,
			Submissions: int32(t.Submissions), TotalSubmissions: int32(t.TotalSubmissions), Error: t.Error,
			ClientsTotal: int32(t.ClientsTotal), ClientOffset: int32(t.ClientOffset)}
		if !t.Deadline.IsZero() {
			ps.DeadlineUnixNano = t.Deadline.UnixNano()
		}
		for j := range t.Fused {
			ps.Fused = append(ps.Fused, fusedToPB(&t.Fused[j]))
		}
		resp.Tasks = append(resp.Tasks, ps)
	}
	return resp, nil
}

// CreateTask implements pb.FederationServer.
func (s *grpcService) CreateTask(ctx context.Context, req *pb.CreateTaskRequest) (*pb.CreateTaskResponse, error) {
	// All or nothing: a task whose tokens could not fit in the reply is not
	// created, since its tokens would be lost and the id taken.
	if b := tokensReplyBound(req.GetClients()); b > s.maxReply {
		return nil, toStatus(errorf(CodeResourceExhausted, "the tokens of %d clients (up to %d bytes) exceed the reply limit of %d bytes; nothing was created. Create the task offline with \"fedirl server task create --store ... --tokens-out FILE\", or raise the server's --max-message-bytes", len(req.GetClients()), b, s.maxReply))
	}
	tokens, err := s.c.CreateTaskAdmin(ctx, credentialsFrom(ctx), specFromPB(req.GetSpec()), req.GetClients())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CreateTaskResponse{Tokens: tokens}, nil
}

// DialConfig configures a gRPC client connection. Zero values are documented defaults.
type DialConfig struct {
	// Token is the bearer token sent with every call (client token, or the
	// admin token for Status).
	Token string
	// TLS is the client's TLS configuration (with Certificates for mutual
	// TLS); nil means plaintext, allowed only to loopback addresses.
	TLS *tls.Config
	// MaxMessageBytes caps each received message (default 4×DefaultMaxMessageBytes).
	MaxMessageBytes int
}

// GRPCClient is the gRPC transport on the client side. It implements Federation.
type GRPCClient struct {
	conn  *grpc.ClientConn
	rpc   pb.FederationClient
	token string
}

// DialGRPC prepares a connection to a fedirl server at addr (host:port).
// The connection is made lazily and re-made after failures, so a client can
// be created before the server is up or while it restarts.
func DialGRPC(addr string, cfg DialConfig) (*GRPCClient, error) {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 4 * DefaultMaxMessageBytes
	}
	var tc credentials.TransportCredentials
	if cfg.TLS != nil {
		tc = credentials.NewTLS(cfg.TLS)
	} else {
		if !IsLoopback(addr) {
			return nil, fmt.Errorf("dialing %s: plaintext is only allowed to loopback addresses; use TLS", addr)
		}
		tc = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(tc),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes)))
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	return &GRPCClient{conn: conn, rpc: pb.NewFederationClient(conn), token: cfg.Token}, nil
}

// Close closes the connection.
func (g *GRPCClient) Close() error { return g.conn.Close() }

func (g *GRPCClient) ctx(ctx context.Context) context.Context {
	if g.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+g.token)
}

// GetTask implements Federation.
func (g *GRPCClient) GetTask(ctx context.Context, taskID, clientID string) (TaskInfo, error) {
	r, err := g.rpc.GetTask(g.ctx(ctx), &pb.GetTaskRequest{TaskId: taskID, ClientId: clientID})
	if err != nil {
		return TaskInfo{}, fromStatus(ctx, err)
	}
	return TaskInfo{Spec: specFromPB(r.GetSpec()), CurrentRound: int(r.GetCurrentRound()), Done: r.GetDone(), WarmStart: r.GetWarmStart(),
		Joint: r.GetJoint(), Trial: r.GetTrial(), JointUpdate: r.GetJointUpdate()}, nil
}

// Submit implements Federation.
func (g *GRPCClient) Submit(ctx context.Context, sub Submission) (SubmitResult, error) {
	r, err := g.rpc.Submit(g.ctx(ctx), &pb.SubmitRequest{TaskId: sub.TaskID, Round: int32(sub.Round), ClientId: sub.ClientID,
		Theta: sub.Theta, DemoCount: int32(sub.DemoCount), Iterations: int32(sub.Iterations), GradNorm: sub.GradNorm,
		Privacy: declarationToPB(sub.Privacy), Reward: sub.Reward, Eval: evalToPB(sub.Eval), Update: sub.Update})
	if err != nil {
		return SubmitResult{}, fromStatus(ctx, err)
	}
	return SubmitResult{Duplicate: r.GetDuplicate(), Round: int(r.GetRound()), Submissions: int(r.GetSubmissions()),
		Quorum: int(r.GetQuorum()), Message: r.GetMessage(), Privacy: declarationFromPB(r.GetPrivacy())}, nil
}

// GetFused implements Federation.
func (g *GRPCClient) GetFused(ctx context.Context, taskID, clientID string, round int, wait time.Duration) (FusedStatus, error) {
	r, err := g.rpc.GetFused(g.ctx(ctx), &pb.GetFusedRequest{TaskId: taskID, ClientId: clientID, Round: int32(round),
		WaitMs: int32(wait / time.Millisecond)})
	if err != nil {
		return FusedStatus{}, fromStatus(ctx, err)
	}
	return FusedStatus{Ready: r.GetReady(), Result: fusedFromPB(r.GetResult()), Submissions: int(r.GetSubmissions()), Quorum: int(r.GetQuorum()),
		WaitingFor: r.GetWaitingFor(), WaitingForMore: int(r.GetWaitingForMore())}, nil
}

// Status implements Federation: every page of the server's status,
// merged (MergeStatusPages).
func (g *GRPCClient) Status(ctx context.Context) ([]TaskStatus, error) {
	var pages [][]TaskStatus
	q := StatusQuery{}
	for {
		page, next, err := g.StatusPage(ctx, q)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page)
		if next == "" {
			return MergeStatusPages(pages), nil
		}
		q.PageToken = next
	}
}

// StatusPage returns one page of the server's status and the next page's
// token ("" after the last).
func (g *GRPCClient) StatusPage(ctx context.Context, q StatusQuery) ([]TaskStatus, string, error) {
	r, err := g.rpc.Status(g.ctx(ctx), &pb.StatusRequest{TaskId: q.Task, ClientId: q.Client, PageToken: q.PageToken, PageSize: int32(q.PageSize)})
	if err != nil {
		return nil, "", fromStatus(ctx, err)
	}
	out, next := statusPageFromPB(r)
	return out, next, nil
}

// statusPageFromPB converts a status reply.
func statusPageFromPB(r *pb.StatusResponse) ([]TaskStatus, string) {
	var out []TaskStatus
	for _, t := range r.GetTasks() {
		ts := TaskStatus{ID: t.GetId(), Round: int(t.GetRound()), Rounds: int(t.GetRounds()), Done: t.GetDone(),
			Quorum: int(t.GetQuorum()), MinClients: int(t.GetMinClients()), ClientsAllowed: t.GetClientsAllowed(),
			ClientsSeen: t.GetClientsSeen(), Submissions: int(t.GetSubmissions()), TotalSubmissions: int(t.GetTotalSubmissions()),
			Error: t.GetError(), ClientsTotal: int(t.GetClientsTotal()), ClientOffset: int(t.GetClientOffset())}
		if d := t.GetDeadlineUnixNano(); d != 0 {
			ts.Deadline = time.Unix(0, d).UTC()
		}
		for _, f := range t.GetFused() {
			ts.Fused = append(ts.Fused, fusedFromPB(f))
		}
		out = append(out, ts)
	}
	return out, r.GetNextPageToken()
}

// CreateTask asks the server to define a task (the connection's token must be
// the server's admin token) and returns the client tokens it issued.
func (g *GRPCClient) CreateTask(ctx context.Context, spec TaskSpec, clients []string) (map[string]string, error) {
	if spec.MaxDemoCount != 0 {
		// The wire format has no field for it yet: refuse rather than
		// create the task without the bound.
		return nil, fmt.Errorf("task spec %s: max_demo_count cannot be sent to a running server; create the task offline (\"fedirl server task create --store ...\")", spec.ID)
	}
	r, err := g.rpc.CreateTask(g.ctx(ctx), &pb.CreateTaskRequest{Spec: specToPB(&spec), Clients: clients})
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return r.GetTokens(), nil
}

// RevokeToken implements pb.FederationServer: the coordinator revokes (or
// rotates) the token, then every connection the client authenticated is
// closed, and the revocation is audited with the client id.
func (s *grpcService) RevokeToken(ctx context.Context, req *pb.RevokeTokenRequest) (*pb.RevokeTokenResponse, error) {
	tok, err := s.c.RevokeToken(credentialsFrom(ctx), req.GetTaskId(), req.GetClientId(), req.GetRotate())
	if err != nil {
		return nil, toStatus(err)
	}
	key := ownerKey(req.GetTaskId(), req.GetClientId())
	// Under mutual TLS the client's connections are authenticated by its
	// certificate, whose common name is its id (for every task it is in):
	// those close too, and it reconnects for its other tasks.
	n := s.conns.CloseClient(key) + s.conns.CloseClient("cert/"+req.GetClientId())
	what := "revoked"
	if req.GetRotate() {
		what = "rotated"
	}
	addr := ""
	if p, ok := peer.FromContext(ctx); ok {
		addr = p.Addr.String()
	}
	s.audit.note(AuditTokenRevoked, addr, pb.Federation_RevokeToken_FullMethodName,
		fmt.Sprintf("client %s: token %s by the admin; %d of its connections closed", key, what, n))
	return &pb.RevokeTokenResponse{Token: tok, ConnectionsClosed: int32(n)}, nil
}

// RevokeToken asks the server to revoke client's token on task (the
// connection's token must be the admin token); with rotate it returns the
// new token issued in its place. It returns how many of the client's
// connections the server closed.
func (g *GRPCClient) RevokeToken(ctx context.Context, task, client string, rotate bool) (newToken string, closed int, err error) {
	r, err := g.rpc.RevokeToken(g.ctx(ctx), &pb.RevokeTokenRequest{TaskId: task, ClientId: client, Rotate: rotate})
	if err != nil {
		return "", 0, fromStatus(ctx, err)
	}
	return r.GetToken(), int(r.GetConnectionsClosed()), nil
}
