package stream

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestArmFromSubject(t *testing.T) {
	for _, tc := range []struct{ subject, arm string }{
		{"rag.trace.live", "live"},
		{"rag.retrieval.canary", "canary"},
		{"rag.answer.shadow-2", "shadow-2"},
		{"a.b", "b"},
		{"rag", ""},
		{"", ""},
		{"rag.trace.*", ""},
		{"rag.trace.>", ""},
		{"rag.trace.", ""},
	} {
		if got := ArmFromSubject(tc.subject); got != tc.arm {
			t.Errorf("ArmFromSubject(%q) = %q, want %q", tc.subject, got, tc.arm)
		}
	}
}

func TestHeaders(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name   string
		h      nats.Header
		tp, id string
	}{
		{"nil", nil, "", ""},
		{"lower", nats.Header{"traceparent": {tp}}, tp, ""},
		{"canonical", nats.Header{"Traceparent": {tp}}, tp, ""},
		{"upper", nats.Header{"TRACEPARENT": {tp}, nats.MsgIdHdr: {"e1"}}, tp, "e1"},
		{"empty values", nats.Header{"Traceparent": {}}, "", ""},
		{"msg id exact only", nats.Header{"nats-msg-id": {"e1"}}, "", ""},
	} {
		if got := Traceparent(tc.h); got != tc.tp {
			t.Errorf("%s: Traceparent = %q, want %q", tc.name, got, tc.tp)
		}
		if got := MsgID(tc.h); got != tc.id {
			t.Errorf("%s: MsgID = %q, want %q", tc.name, got, tc.id)
		}
	}
}

func TestKindString(t *testing.T) {
	want := [NumKinds]string{"trace", "retrieval", "answer", "judgement"}
	for k := Kind(0); k < NumKinds; k++ {
		if k.String() != want[k] {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want[k])
		}
	}
	if Kind(9).String() != "Kind(9)" {
		t.Errorf("unknown kind: %q", Kind(9).String())
	}
}
