package federation

import (
	"bytes"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// halfSentStreams opens conns plaintext HTTP/2 connections to addr and on
// each starts streams Submit calls whose request message is announced as
// 1 MiB but never finished, as an unauthenticated attacker would. It returns
// the connections (close them to release the server) after the frames are
// written.
func halfSentStreams(t *testing.T, addr string, conns, streams int) []net.Conn {
	t.Helper()
	var out []net.Conn
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/fedirl.v1.Federation/Submit"}, {Name: ":authority", Value: addr},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}} {
		enc.WriteField(f)
	}
	block := hb.Bytes()
	for range conns {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
		go func() {
			var mu sync.Mutex
			fr := http2.NewFramer(c, c)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			mu.Lock()
			c.Write([]byte(http2.ClientPreface))
			fr.WriteSettings()
			mu.Unlock()
			go func() { // acknowledge the server's settings, drain the rest
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
						mu.Lock()
						fr.WriteSettingsAck()
						mu.Unlock()
					}
				}
			}()
			for i := range streams {
				id := uint32(2*i + 1)
				mu.Lock()
				err1 := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
				err2 := fr.WriteData(id, false, []byte{0, 0, 0x10, 0, 0, 1, 2, 3, 4, 5, 6, 7})
				mu.Unlock()
				if err1 != nil || err2 != nil {
					return
				}
			}
		}()
	}
	return out
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHalfSentStreamsMemoryBounded: 20 connections each opening 1,000
// half-sent calls. With the old limits (1,000 streams per connection, no
// connection limit) the issue measured ≈ +238 MB; with the defaults (16
// streams per connection) and 10 connections allowed, the server holds at
// most 160 such streams, and its heap grows by less than 8 MB.
func TestHalfSentStreamsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("attack simulation")
	}
	f := newFixture(t, CoordinatorConfig{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewGRPCServer(f.coord, GRPCServerConfig{})
	go s.Serve(LimitConnections(lis, 10))
	defer s.Stop()
	before := heapInUse()
	conns := halfSentStreams(t, lis.Addr().String(), 20, 1000)
	time.Sleep(1500 * time.Millisecond) // let the server take in what it accepts
	grown := int64(heapInUse()) - int64(before)
	for _, c := range conns {
		c.Close()
	}
	t.Logf("server heap grew by %.1f MB under 20 connections × 1000 half-sent calls", float64(grown)/(1<<20))
	if grown > 8<<20 {
		t.Fatalf("heap grew by %.1f MB, bound 8 MB", float64(grown)/(1<<20))
	}
}
