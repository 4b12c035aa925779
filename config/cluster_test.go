package config

import "testing"

func TestMemberFromHost(t *testing.T) {
	for _, c := range []struct {
		host    string
		members int
		want    string
		err     bool
	}{
		{"shadoweval-0", 3, "0", false},
		{"shadoweval-4", 3, "1", false},
		{"rag-eval-shadoweval-12", 4, "0", false},
		{"shadoweval", 3, "", true},
		{"shadoweval-x", 3, "", true},
		{"shadoweval-1", 0, "", true},
	} {
		got, err := memberFromHost(c.host, c.members)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("memberFromHost(%q, %d) = %q, %v; want %q, error %v", c.host, c.members, got, err, c.want, c.err)
		}
	}
}

func TestClusterDefaults(t *testing.T) {
	c := Default().Cluster
	if c.Clustered() || c.Bucket() != DefaultClusterBucket || c.Gold != "partitions" {
		t.Fatalf("default cluster section = %+v", c)
	}
	c.Partitions = 6
	if c.MemberCount() != 6 {
		t.Errorf("members default to one per partition, got %d", c.MemberCount())
	}
	c.Members = 2
	if c.MemberCount() != 2 {
		t.Errorf("MemberCount = %d, want 2", c.MemberCount())
	}
}
