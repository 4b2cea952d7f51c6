package engines

import (
	"strings"
	"testing"
)

func TestParseSelection(t *testing.T) {
	for _, tc := range []struct {
		in       string
		row, ref string
		label    string
	}{
		{"varnish", "varnish", "varnish", ""},
		{" varnish@9.0.2 ", "varnish@9.0.2", "varnish@9.0.2", ""},
		{"prod=varnish", "prod", "varnish", "prod"},
		{"candidate=varnish@9.0.2", "candidate", "varnish@9.0.2", "candidate"},
		{"base-builtin=builtin", "base-builtin", "builtin", "base-builtin"},
		{"external@a", "external@a", "external@a", ""},
		{"null", "null", "null", ""},
	} {
		s, err := ParseSelection(tc.in)
		if err != nil || s.Row() != tc.row || s.Ref() != tc.ref || s.Label != tc.label {
			t.Errorf("ParseSelection(%q) = %+v (row %q, ref %q), %v; want row %q, ref %q, label %q", tc.in, s, s.Row(), s.Ref(), err, tc.row, tc.ref, tc.label)
		}
		if err == nil && s.String() != strings.TrimSpace(tc.in) {
			t.Errorf("%q reads back as %q", tc.in, s.String())
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"squid", "want builtin, null, external"},
		{"varnish@", "want NAME@VERSION"},
		{"varnish@9/0", "want NAME@VERSION"},
		{"builtin@1.0", "builtin has no builds"},
		{"varnish=nginx", "is an engine's name"},
		{"-x=varnish", "label \"-x\""},
		{"=varnish", "label \"\""},
		{"a b=varnish", "label \"a b\""},
	} {
		if _, err := ParseSelection(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSelection(%q): %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestParseSelections(t *testing.T) {
	got, err := ParseSelections("base=builtin, new=builtin,varnish@9.0.2")
	if err != nil || len(got) != 3 || got[0].Row() != "base" || got[1].Row() != "new" || got[2].Row() != "varnish@9.0.2" {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"varnish,varnish", "varnish given twice (a label tells two variants of one engine apart: a=varnish,b=varnish)"},
		{"a=varnish,a=nginx", "a given twice"},
		{"", "none given"},
		{" , ", "none given"},
	} {
		if _, err := ParseSelections(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSelections(%q): %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
