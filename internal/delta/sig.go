package delta

import (
	"crypto/sha256"
	"io"
	"math"
	"sort"
)

// blockSize picks the block size for a basis of size bytes: about the
// square root, in whole KiB, bounded to minBlock..maxBlock.
func blockSize(size int64) int {
	bs := (int64(math.Ceil(math.Sqrt(float64(size)))) + 1023) / 1024 * 1024
	return int(min(max(bs, minBlock), maxBlock))
}

// rolling is rsync's weak checksum: s1 is the sum of the bytes of the
// window, s2 the sum of the running s1; both are kept modulo 2^16 when
// combined.
type rolling struct {
	s1, s2 uint32
	n      uint32
}

func (r *rolling) init(p []byte) {
	var s1, s2 uint32
	for _, c := range p {
		s1 += uint32(c)
		s2 += s1
	}
	r.s1, r.s2, r.n = s1, s2, uint32(len(p))
}

// roll drops out from the front of the window and adds in at the back.
func (r *rolling) roll(out, in byte) {
	r.s1 += uint32(in) - uint32(out)
	r.s2 += r.s1 - r.n*uint32(out)
}

func (r *rolling) sum() uint32 { return r.s1&0xffff | r.s2<<16 }

func weakSum(p []byte) uint32 {
	var r rolling
	r.init(p)
	return r.sum()
}

func strongSum(p []byte) [strongLen]byte {
	h := sha256.Sum256(p)
	var s [strongLen]byte
	copy(s[:], h[:strongLen])
	return s
}

// signature computes the block sums of the first size bytes of r.
func signature(r io.Reader, size int64, bs int) ([]blockSum, error) {
	n := int((size + int64(bs) - 1) / int64(bs))
	sums := make([]blockSum, 0, n)
	buf := make([]byte, bs)
	for i := 0; i < n; i++ {
		want := bs
		if rest := size - int64(i)*int64(bs); rest < int64(bs) {
			want = int(rest)
		}
		if _, err := io.ReadFull(r, buf[:want]); err != nil {
			return nil, err
		}
		sums = append(sums, blockSum{Weak: weakSum(buf[:want]), Strong: strongSum(buf[:want])})
	}
	return sums, nil
}

// index finds blocks by weak sum: a bit filter first (cheap, checked at
// every byte), then the block numbers sorted by weak sum.
type index struct {
	sums    []blockSum
	bs      int
	lastLen int // length of the last block
	filter  []uint64
	shift   uint
	order   []int32          // block numbers sorted by weak sum
	first   map[uint32]int32 // weak sum → first position in order
}

func newIndex(sums []blockSum, bs int, basisSize int64) *index {
	ix := &index{sums: sums, bs: bs}
	ix.lastLen = int(basisSize - int64(len(sums)-1)*int64(bs))
	logBits := uint(16)
	for (1<<logBits) < 32*len(sums) && logBits < 30 {
		logBits++
	}
	ix.filter = make([]uint64, (1<<logBits)/64)
	ix.shift = 32 - logBits
	ix.order = make([]int32, len(sums))
	for i := range ix.order {
		ix.order[i] = int32(i)
	}
	sort.SliceStable(ix.order, func(a, b int) bool { return sums[ix.order[a]].Weak < sums[ix.order[b]].Weak })
	ix.first = make(map[uint32]int32, len(sums))
	for pos, b := range ix.order {
		w := sums[b].Weak
		if _, ok := ix.first[w]; !ok {
			ix.first[w] = int32(pos)
		}
		h := ix.hash(w)
		ix.filter[h/64] |= 1 << (h % 64)
	}
	return ix
}

func (ix *index) hash(w uint32) uint32 { return (w * 0x9E3779B1) >> ix.shift }

func (ix *index) maybe(w uint32) bool {
	h := ix.hash(w)
	return ix.filter[h/64]&(1<<(h%64)) != 0
}

// find returns the block whose sums match window (of weak sum w), preferring
// block prefer, or -1.
func (ix *index) find(w uint32, window []byte, prefer int) int {
	pos, ok := ix.first[w]
	if !ok {
		return -1
	}
	var strong [strongLen]byte
	have := false
	found := -1
	for p := int(pos); p < len(ix.order) && ix.sums[ix.order[p]].Weak == w; p++ {
		b := int(ix.order[p])
		blen := ix.bs
		if b == len(ix.sums)-1 {
			blen = ix.lastLen
		}
		if blen != len(window) {
			continue
		}
		if !have {
			strong = strongSum(window)
			have = true
		}
		if ix.sums[b].Strong == strong {
			if b == prefer {
				return b
			}
			if found < 0 {
				found = b
			}
		}
	}
	return found
}
