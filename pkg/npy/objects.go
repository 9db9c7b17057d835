package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// EncodeEmptyDicts returns the bytes np.save writes for np.full(n, {}): a
// 1-D object array (dtype |O, a pickle) of n references to one empty dict.
// imitation writes exactly this as the infos of trajectories that carry no
// info dicts, and its .npz loader needs the field. Reading it back in
// Python needs np.load(..., allow_pickle=True), as imitation's loader does.
// It panics if n < 1.
func EncodeEmptyDicts(n int) []byte {
	if n < 1 || n >= 1<<31 {
		panic(fmt.Sprintf("npy: EncodeEmptyDicts(%d): want 1 ≤ n < 2^31", n))
	}
	var p bytes.Buffer
	// numpy.core.multiarray._reconstruct(ndarray, (0,), b'b') ...
	p.WriteString("\x80\x03cnumpy.core.multiarray\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00\x85q\x02C\x01bq\x03\x87q\x04Rq\x05(K\x01")
	// ... .__setstate__((1, (n,), dtype('O8', False, True) with its state, False, [items])).
	pickleInt(&p, n)
	p.WriteString("\x85q\x06cnumpy\ndtype\nq\x07X\x02\x00\x00\x00O8q\x08\x89\x88\x87q\tRq\n(K\x03X\x01\x00\x00\x00|q\x0bNNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tq\x0cb\x89]q\r")
	// The items, as CPython's pickler batches a list: one item with
	// APPEND, else batches of up to 1000 between MARK and APPENDS; the
	// dict is memoized at index 14 and then referenced.
	const first, again = "}q\x0e", "h\x0e"
	if n == 1 {
		p.WriteString(first + "a")
	} else {
		for done := 0; done < n; {
			p.WriteByte('(')
			for k := 0; k < 1000 && done < n; k++ {
				if done == 0 {
					p.WriteString(first)
				} else {
					p.WriteString(again)
				}
				done++
			}
			p.WriteByte('e')
		}
	}
	p.WriteString("tq\x0fb.")

	hdr := fmt.Sprintf("{'descr': '|O', 'fortran_order': False, 'shape': (%d,), }", n)
	total := 10 + len(hdr) + 1
	hdr += string(bytes.Repeat([]byte{' '}, (64-total%64)%64)) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	b.Write(p.Bytes())
	return b.Bytes()
}

// pickleInt writes a non-negative int as CPython's pickler does at
// protocol 3: BININT1, BININT2 or BININT.
func pickleInt(p *bytes.Buffer, v int) {
	switch {
	case v < 1<<8:
		p.WriteByte('K')
		p.WriteByte(byte(v))
	case v < 1<<16:
		p.WriteByte('M')
		binary.Write(p, binary.LittleEndian, uint16(v))
	default:
		p.WriteByte('J')
		binary.Write(p, binary.LittleEndian, int32(v))
	}
}
