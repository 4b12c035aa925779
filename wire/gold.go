package wire

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shadoweval/shadoweval/vocab"
)

// Gold is one gold item (SPEC §2.1).
type Gold struct {
	QID        string
	Answerable bool
	Question   string
	// GoldClaimSubstr is nil when the field is missing or null: the
	// reference scorer treats that as failed containment, while an empty
	// list is vacuously contained.
	GoldClaimSubstr []string
	// GoldCitations is the gold_citations field alone, as the seed 002
	// reference scorer reads it; Relevant is the seed 001 alias.
	GoldCitations   []string
	Relevant        []string
	RelevantOffsets map[string][2]int64
	AnchorSection   string
	Negatives       []string
	Paraphrases     []string
	Constraints     []string
	Type            string
}

// Citations is the gold citation set G: gold_citations united with its alias
// relevant, in first-seen order.
func (g *Gold) Citations() []string {
	if len(g.Relevant) == 0 {
		return g.GoldCitations
	}
	if len(g.GoldCitations) == 0 {
		return g.Relevant
	}
	seen := make(map[string]bool, len(g.GoldCitations)+len(g.Relevant))
	out := make([]string, 0, len(g.GoldCitations)+len(g.Relevant))
	for _, list := range [][]string{g.GoldCitations, g.Relevant} {
		for _, id := range list {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

type goldWire struct {
	QID             *string             `json:"qid"`
	Answerable      *bool               `json:"answerable"`
	Question        string              `json:"question"`
	GoldClaimSubstr []string            `json:"gold_claim_substr"`
	GoldCitations   []string            `json:"gold_citations"`
	Relevant        []string            `json:"relevant"`
	RelevantOffsets map[string][2]int64 `json:"relevant_offsets"`
	AnchorSection   string              `json:"anchor_section"`
	Negatives       []string            `json:"negatives"`
	Paraphrases     []string            `json:"paraphrases"`
	Constraints     []string            `json:"constraints"`
	Type            string              `json:"type"`
}

// DecodeGold decodes and validates one gold line. Unknown fields are
// ignored. The error is a *FieldError.
func DecodeGold(line []byte) (Gold, error) {
	var w goldWire
	if err := unmarshal(line, &w); err != nil {
		return Gold{}, err
	}
	switch {
	case w.QID == nil:
		return Gold{}, fieldErr("qid", "required")
	case *w.QID == "":
		return Gold{}, fieldErr("qid", "must not be empty")
	case w.Answerable == nil:
		return Gold{}, fieldErr("answerable", "required (true or false)")
	}
	for id, off := range w.RelevantOffsets {
		if off[0] < 0 || off[1] < off[0] {
			return Gold{}, fieldErr("relevant_offsets."+id, "want 0 <= start <= end, got [%d,%d]", off[0], off[1])
		}
	}
	if err := checkDotPath("anchor_section", w.AnchorSection); err != nil {
		return Gold{}, err
	}
	if w.Type == "" {
		w.Type = vocab.DefaultType
	}
	return Gold{
		QID:             *w.QID,
		Answerable:      *w.Answerable,
		Question:        w.Question,
		GoldClaimSubstr: w.GoldClaimSubstr,
		GoldCitations:   w.GoldCitations,
		Relevant:        w.Relevant,
		RelevantOffsets: w.RelevantOffsets,
		AnchorSection:   w.AnchorSection,
		Negatives:       w.Negatives,
		Paraphrases:     w.Paraphrases,
		Constraints:     w.Constraints,
		Type:            w.Type,
	}, nil
}

// checkDotPath refuses section paths with empty components ("S..4", ".S").
func checkDotPath(field, p string) error {
	if p == "" {
		return nil
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return fieldErr(field, "empty component in section path %q", p)
		}
	}
	return nil
}

// maxReportedRowErrors caps how many bad rows one refusal of a gold file
// lists.
const maxReportedRowErrors = 10

var errTooManyRowErrors = errors.New("too many bad rows")

// ReadGoldFile decodes and validates every row of the gold file at path,
// on every core: prepare turns each row into a T (in parallel), and each
// gets the rows in file order. Any bad row refuses the file: the error
// lists up to ten rows with their line numbers.
func ReadGoldFile[T any](path string, prepare func(Gold) T, each func(T)) error {
	return ReadGoldFileKeeping(path, nil, prepare, each)
}

// ReadGoldFileKeeping is ReadGoldFile for the rows whose qid keep takes
// (nil: all): a row of another qid is skipped before it is decoded, so a
// replica holding some partitions' gold never holds the rest, even for a
// moment. A row whose qid cannot be read is decoded, and refused.
func ReadGoldFileKeeping[T any](path string, keep func(qid string) bool, prepare func(Gold) T, each func(T)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("gold %w", err)
	}
	defer f.Close()
	var rowErrs []error
	// ParallelLines stops at the first error; to list several bad rows,
	// decoding failures travel as values.
	type row struct {
		v    T
		err  error
		skip bool
	}
	err = ParallelLines(f, path, func(line []byte) (row, error) {
		if keep != nil {
			if q := EventQID(line); q != "" && !keep(q) {
				return row{skip: true}, nil
			}
		}
		g, err := DecodeGold(line)
		if err != nil {
			return row{err: err}, nil
		}
		return row{v: prepare(g)}, nil
	}, func(lineNo int, r row) error {
		if r.err != nil {
			rowErrs = append(rowErrs, &LineError{File: path, Line: lineNo, Err: r.err})
			if len(rowErrs) == maxReportedRowErrors {
				return errTooManyRowErrors
			}
			return nil
		}
		if !r.skip {
			each(r.v)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errTooManyRowErrors) {
		return fmt.Errorf("gold %w", err)
	}
	if len(rowErrs) > 0 {
		return fmt.Errorf("gold file %s refused: %w", path, errors.Join(rowErrs...))
	}
	return nil
}
