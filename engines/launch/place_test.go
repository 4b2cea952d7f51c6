package launch

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePlacement(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Placement
	}{
		{"generator=unix:///run/a.sock@10.9.0.2,unix:///run/b.sock@10.9.0.3,engine=tcp://10.9.0.4:2376@10.9.0.4,origin=lab5@10.9.0.5",
			Placement{Generators: []Host{{"unix:///run/a.sock", "10.9.0.2"}, {"unix:///run/b.sock", "10.9.0.3"}},
				Engine: Host{"tcp://10.9.0.4:2376", "10.9.0.4"}, Origin: Host{"lab5", "10.9.0.5"}}},
		{"engine=ssh://me@edge1", Placement{Engine: Host{Endpoint: "ssh://me@edge1"}}},
		{"engine=ssh://me@edge1@fd00::4", Placement{Engine: Host{"ssh://me@edge1", "fd00::4"}}},
		{"origin=default, generator=gen-a@[fd00::2]", Placement{Origin: Host{Endpoint: "default"}, Generators: []Host{{"gen-a", "fd00::2"}}}},
	} {
		got, err := ParsePlacement(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.in, got, c.want)
		}
		if !got.Placed() {
			t.Errorf("%s: not placed", c.in)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"", "empty"},
		{"unix:///a.sock", "no role"},
		{"engine=a,b", "only generators may be several"},
		{"engine=a,engine=b", "placed twice"},
		{"cache=a", "unknown role"},
		{"engine=http://x:80", "not a Docker endpoint"},
		{"engine=tcp://x", "tcp://host:port"},
		{"engine=unix://rel.sock", "absolute socket path"},
		{"engine=a@h3.example", "IP address"},
		{"engine=a@0.0.0.0", "IP address"},
		{"engine=my ctx", "context name"},
		{"generator=", "no host"},
	} {
		_, err := ParsePlacement(c.in)
		var pe *PlaceError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want a PlaceError saying %q", c.in, err, c.says)
		}
	}
	if (Placement{}).Placed() {
		t.Error("the zero placement is placed")
	}
}
