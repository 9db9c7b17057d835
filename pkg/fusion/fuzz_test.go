package fusion_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/fusion"
)

// FuzzDecodeOptions: a task's fusion section never panics the decoder, and
// whatever it accepts encodes back to options it accepts unchanged.
func FuzzDecodeOptions(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"method":"barycentric","solver":"paper"}`, `{"method":"trimmed-mean","trim_fraction":0.1}`,
		`{"method":"krum","byzantine":2}`, `{"method":"normalized-mean","sigma_mode":"per-client"}`, `{"weighting":"demos","demo_cap":3}`,
		`{"method":"median","trim_fraction":0.1}`, `{"byzantine":-1}`, `[]`, `{"method":7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := fusion.DecodeOptions(b)
		if err != nil {
			return
		}
		enc, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("accepted options %+v do not encode: %v", o, err)
		}
		back, err := fusion.DecodeOptions(enc)
		if err != nil {
			t.Fatalf("accepted %s, refused its encoding %s: %v", b, enc, err)
		}
		if again, _ := json.Marshal(back); string(again) != string(enc) {
			t.Fatalf("round trip %s → %s", enc, again)
		}
	})
}

// FuzzFuse: every registry method on arbitrary finite θ_i and weights
// returns an error or a θ of the right length; it never panics.
func FuzzFuse(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, uint8(3), uint8(2))
	f.Add(make([]byte, 64), uint8(1), uint8(1))
	p := probe3()
	f.Fuzz(func(t *testing.T, raw []byte, kRaw, wRaw uint8) {
		k := 1 + int(kRaw%7)
		var vals []float64
		for len(raw) >= 8 {
			v := math.Float64frombits(binary.LittleEndian.Uint64(raw))
			raw = raw[8:]
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals = append(vals, math.Mod(v, 1e6))
			}
		}
		if len(vals) < 2*k {
			return
		}
		thetas := make([][]float64, k)
		for i := range thetas {
			thetas[i] = vals[2*i : 2*i+2]
		}
		var w []float64
		if wRaw%2 == 1 {
			for i := range k {
				w = append(w, float64((int(wRaw)>>1+i)%4))
			}
		}
		for _, name := range fusion.Methods() {
			out, err := fusion.Fuse(p, thetas, w, fusion.Options{Method: name})
			if err == nil && len(out.Theta) != 2 {
				t.Fatalf("%s: θ of length %d", name, len(out.Theta))
			}
		}
	})
}
