package engines

import (
	"fmt"
	"slices"
	"strings"
)

// ExternalName is the engine hlsbench does not start: a proxy the user
// runs, reached at a URL, fetching from an origin hlsbench starts.
const ExternalName = "external"

// Selection is one engine as a run selects it: [LABEL=]NAME[@VERSION].
//
// NAME@VERSION picks one build of a process engine (varnish@9.0.2); for
// external, external@TAG tells several external proxies apart (their URLs
// and origins are given per TAG). LABEL= names a variant, so one engine can
// run twice side by side with another binary or configuration
// (prod=varnish,candidate=varnish): the label is then the row's name in
// the results, where a selection without one is named as given.
type Selection struct {
	Label   string
	Name    string
	Version string
}

// Row is the selection's name in results: its label, else NAME or
// NAME@VERSION.
func (s Selection) Row() string {
	if s.Label != "" {
		return s.Label
	}
	return s.Ref()
}

// Ref is NAME or NAME@VERSION, without the label.
func (s Selection) Ref() string {
	if s.Version != "" {
		return s.Name + "@" + s.Version
	}
	return s.Name
}

// String is the selection as it was given.
func (s Selection) String() string {
	if s.Label != "" {
		return s.Label + "=" + s.Ref()
	}
	return s.Ref()
}

// SelectionNames are the engine names a selection may give: builtin, null,
// external and every process engine.
func SelectionNames() []string {
	return append([]string{"builtin", NullName, ExternalName}, ProcessEngines()...)
}

// ParseSelection reads one selection. Errors say what is accepted.
func ParseSelection(s string) (Selection, error) {
	s = strings.TrimSpace(s)
	var sel Selection
	ref := s
	if label, rest, ok := strings.Cut(s, "="); ok {
		sel.Label, ref = label, rest
		if !validLabel(label) {
			return Selection{}, fmt.Errorf("%q: label %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", s, label)
		}
		if slices.Contains(SelectionNames(), label) {
			return Selection{}, fmt.Errorf("%q: label %q is an engine's name: give the variant a name of its own (prod=varnish)", s, label)
		}
	}
	name, version, hasAt := strings.Cut(ref, "@")
	sel.Name, sel.Version = name, version
	names := SelectionNames()
	switch {
	case !slices.Contains(names, name):
		return Selection{}, fmt.Errorf("%q: want %s, or NAME@VERSION for a build of one of %s, or LABEL=NAME for a variant",
			s, strings.Join(names, ", "), strings.Join(ProcessEngines(), ", "))
	case hasAt && (version == "" || strings.ContainsAny(version, "@/= ")):
		return Selection{}, fmt.Errorf("%q: want NAME@VERSION, e.g. varnish@9.0.2 (or external@TAG)", s)
	case version != "" && (name == "builtin" || name == NullName):
		return Selection{}, fmt.Errorf("%q: %s has no builds to choose from (builtin and null are this hlsbench; LABEL=%s with a binary runs another)", s, name, name)
	}
	return sel, nil
}

// ParseSelections reads a comma list of selections; every row name must
// be its own.
func ParseSelections(list string) ([]Selection, error) {
	var out []Selection
	seen := map[string]bool{}
	for _, part := range strings.Split(list, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		sel, err := ParseSelection(part)
		if err != nil {
			return nil, err
		}
		if seen[sel.Row()] {
			return nil, fmt.Errorf("%q: %s given twice (a label tells two variants of one engine apart: a=%s,b=%s)", sel, sel.Row(), sel.Ref(), sel.Ref())
		}
		seen[sel.Row()] = true
		out = append(out, sel)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("none given")
	}
	return out, nil
}

func validLabel(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}
