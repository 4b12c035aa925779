package eval

import (
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// goldSet is the gold file as the sidecar loads it (sidecar.LoadGold):
// every row validated by wire.DecodeGold, any bad row refuses the file,
// a repeated qid keeps its last row. Items are numbered so that each
// per-qid table of an evaluation is a slice, not a map.
type goldSet struct {
	items []*checks.Gold // distinct qids, in order of first appearance
	index map[string]int32
}

func loadGold(path string) (*goldSet, error) {
	gs := &goldSet{index: map[string]int32{}}
	// Items are prepared on every core, as the rows are decoded.
	err := wire.ReadGoldFile(path, checks.NewGold, func(g *checks.Gold) {
		if i, ok := gs.index[g.QID]; ok {
			gs.items[i] = g
			return
		}
		gs.index[g.QID] = int32(len(gs.items))
		gs.items = append(gs.items, g)
	})
	if err != nil {
		return nil, err
	}
	// The λ group key of each qid, as the sidecar's gold store numbers
	// them: the windows then hash no qid strings.
	for i, it := range gs.items {
		if i+1 < window.MaxQIDKey {
			it.Key = uint32(i + 1)
		}
	}
	return gs, nil
}
