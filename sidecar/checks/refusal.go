package checks

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/window"
)

func init() { evaluations = append(evaluations, refusalEvaluation) }

// refusalEvaluation: 1 (refused) or 0 (shipped), with the error it is
// when the gold item says otherwise.
func refusalEvaluation(o *window.Observation) (Evaluation, bool) {
	if !o.HasAnswer {
		return Evaluation{}, false
	}
	ev := Evaluation{Name: "refusal", Label: "shipped"}
	if !o.Shipped {
		ev.Score, ev.Label = 1, "refused"
	}
	switch {
	case !o.Shipped && o.Answerable:
		ev.Explanation = "over-refusal: the gold item is answerable"
	case o.Shipped && !o.Answerable:
		ev.Explanation = "under-refusal: the gold item is not answerable"
	}
	return ev, true
}

// RefusalToken is the only correct answer to an unanswerable question.
const RefusalToken = "not in context"

// IsRefusal reports whether claim is the refusal token. A missing or null
// claim is passed as "" and counts as shipped.
//
// Strip then lower, in Python's sense, as the reference does: surrounding
// NBSP and U+001C..U+001F are stripped, an inner NBSP is not a space.
func IsRefusal(claim string) bool {
	c := pycompat.Strip(claim)
	return isStrippedRefusal(c, isASCII(c))
}

// isStrippedRefusal is IsRefusal of a claim already stripped, ascii
// saying whether it is all ASCII.
func isStrippedRefusal(c string, ascii bool) bool {
	if ascii {
		// Lowering ASCII is ASCII case folding; skip the copy.
		return len(c) == len(RefusalToken) && strings.EqualFold(c, RefusalToken)
	}
	// Lowering never shortens a string in code points, so a longer claim
	// cannot lower to the token.
	if utf8.RuneCountInString(c) > utf8.RuneCountInString(RefusalToken) {
		return false
	}
	return pycompat.Lower(c) == RefusalToken
}

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 { // 8 bytes at a time: no byte has its top bit
		if binary.LittleEndian.Uint64([]byte(s[i:i+8]))&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
