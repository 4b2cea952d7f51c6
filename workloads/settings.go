package workloads

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Setting is one thing a user may change about a workload, or about every
// workload (the protocol's passes, their length, the rate), declared in the
// file of what it shapes: its name, which is also its key in a Config and
// what an error about it names; its help line; its default and the values
// of the quick and nightly profiles; and what it accepts. A front end makes
// its options from them (the CLI a flag each, named as the setting), so a
// workload's settings are added, documented and checked in one place.
type Setting interface {
	// Name is the setting's name ("ban-for"): the CLI's flag.
	Name() string
	// Usage is its help line.
	Usage() string
	// Type names the kind of value it takes ("int", "duration", ...).
	Type() string
	// Text is its value in c, as Set reads it back.
	Text(c Config) string
	// Set reads s into c, or says what is accepted (a *FieldError).
	Set(c *Config, s string) error
	// Copy sets the setting in c to its value in from.
	Copy(c *Config, from Config)

	profile(c *Config, p profile)
	check(c Config) error
	record(c Config) (key string, v any)
}

// profile is a set of values for the settings: the reference protocol,
// --quick or --nightly.
type profile int

const (
	reference profile = iota
	quick
	nightly
)

// param is a Setting whose value is a T. Protocol settings live in
// Config's fields (field is set); a workload's own live in Config's map
// under their name, so declaring one touches nothing outside its file.
type param[T any] struct {
	name, usage, typ string
	def              T
	quick, nightly   *T
	// accept says what is wrong with a value ("" when it is accepted);
	// its text follows the value in the error ("want 1 or more").
	accept func(T) string
	parse  func(string) (T, error)
	format func(T) string
	// key is where the run record keeps the value ("repeated_bans.for";
	// "" keeps it under its name with - as _); store its form there.
	key   string
	store func(T) any
	field func(*Config) *T
}

// Of is the setting's value in c: the one set, or its default.
func (p *param[T]) Of(c Config) T {
	if p.field != nil {
		return *p.field(&c)
	}
	if v, ok := c.vals[p.name]; ok {
		return v.(T)
	}
	return p.def
}

// In sets the setting's value in c.
func (p *param[T]) In(c *Config, v T) {
	if p.field != nil {
		*p.field(c) = v
		return
	}
	// A Config is a value: copies must not share what one of them sets.
	m := maps.Clone(c.vals)
	if m == nil {
		m = map[string]any{}
	}
	m[p.name] = v
	c.vals = m
}

func (p *param[T]) Name() string         { return p.name }
func (p *param[T]) Usage() string        { return p.usage }
func (p *param[T]) Type() string         { return p.typ }
func (p *param[T]) Text(c Config) string { return p.format(p.Of(c)) }
func (p *param[T]) Copy(c *Config, from Config) {
	p.In(c, p.Of(from))
}

func (p *param[T]) Set(c *Config, s string) error {
	v, err := p.parse(s)
	if err != nil {
		return fieldErr(p.name, "%q: %v", s, err)
	}
	if msg := p.accept(v); msg != "" {
		return fieldErr(p.name, "%s: %s", p.format(v), msg)
	}
	p.In(c, v)
	return nil
}

func (p *param[T]) profile(c *Config, pr profile) {
	switch {
	case pr == reference && p.field != nil:
		p.In(c, p.def)
	case pr == quick && p.quick != nil:
		p.In(c, *p.quick)
	case pr == nightly && p.nightly != nil:
		p.In(c, *p.nightly)
	}
}

func (p *param[T]) check(c Config) error {
	v := p.Of(c)
	if msg := p.accept(v); msg != "" {
		return fieldErr(p.name, "%s: %s", p.format(v), msg)
	}
	return nil
}

func (p *param[T]) record(c Config) (string, any) {
	key := p.key
	if key == "" {
		key = strings.ReplaceAll(p.name, "-", "_")
	}
	v := p.Of(c)
	if p.store != nil {
		return key, p.store(v)
	}
	return key, v
}

// Quick gives the setting a value in the --quick profile.
func (p *param[T]) Quick(v T) *param[T] { p.quick = &v; return p }

// Nightly gives the setting a value in the --nightly profile.
func (p *param[T]) Nightly(v T) *param[T] { p.nightly = &v; return p }

// Accept sets what the setting accepts.
func (p *param[T]) Accept(f func(T) string) *param[T] { p.accept = f; return p }

// Record keeps the value in the run record under key (a dotted path).
func (p *param[T]) Record(key string) *param[T] { p.key = key; return p }

// Store keeps the value in the run record in the form f gives it.
func (p *param[T]) Store(f func(T) any) *param[T] { p.store = f; return p }

// Field keeps the value in one of Config's fields.
func (p *param[T]) Field(f func(*Config) *T) *param[T] { p.field = f; return p }

func newParam[T any](name string, def T, usage, typ string, parse func(string) (T, error), format func(T) string) *param[T] {
	return &param[T]{name: name, usage: usage, typ: typ, def: def, parse: parse, format: format,
		accept: func(T) string { return "" }}
}

// intSetting declares a whole-number setting.
func intSetting(name string, def int, usage string) *param[int] {
	return newParam(name, def, usage, "int", func(s string) (int, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 0)
		if err != nil {
			return 0, fmt.Errorf("want a whole number")
		}
		return int(v), nil
	}, strconv.Itoa)
}

// floatSetting declares a number setting.
func floatSetting(name string, def float64, usage string) *param[float64] {
	return newParam(name, def, usage, "float", func(s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, fmt.Errorf("want a number")
		}
		return v, nil
	}, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// durationSetting declares a duration setting; the run record keeps its
// text ("5s").
func durationSetting(name string, def time.Duration, usage string) *param[time.Duration] {
	p := newParam(name, def, usage, "duration", func(s string) (time.Duration, error) {
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("want a duration with its unit, e.g. 2s or 500ms")
		}
		return v, nil
	}, time.Duration.String)
	p.store = func(v time.Duration) any { return v.String() }
	return p
}

// stringSetting declares a text setting.
func stringSetting(name, def, usage string) *param[string] {
	return newParam(name, def, usage, "string", func(s string) (string, error) { return s, nil },
		func(s string) string { return s })
}

// atLeast accepts n and more.
func atLeast[T int | int64 | float64 | time.Duration](n T, what string) func(T) string {
	return func(v T) string {
		if v < n {
			return "want " + what
		}
		return ""
	}
}

// between accepts lo to hi (a NaN neither).
func between[T int | float64](lo, hi T, what string) func(T) string {
	return func(v T) string {
		if !(v >= lo && v <= hi) {
			return "want " + what
		}
		return ""
	}
}

// protocolSettings are every workload's: its passes, their length and
// load, and what a spoiled pass costs.
var (
	passesSetting = intSetting("passes", 20, "measured passes per test").
			Quick(3).Nightly(10).Accept(atLeast(1, "1 or more")).Field(func(c *Config) *int { return &c.Passes })
	warmupsSetting = intSetting("warmups", 3, "unmeasured warm-up passes per test").
			Quick(1).Nightly(1).Accept(atLeast(0, "0 or more")).Field(func(c *Config) *int { return &c.Warmups })
	passDurationSetting = durationSetting("pass-duration", 5*time.Second, "length of one pass of a rate workload").
				Quick(2 * time.Second).Nightly(3 * time.Second).Accept(atLeast(100*time.Millisecond, "at least 100ms")).
				Field(func(c *Config) *time.Duration { return &c.PassDuration })
	rateSetting = floatSetting("rate", 0, "override every rate workload's rate (0: each workload's own)").
			Accept(atLeast(0.0, "0 (each workload's own) or more")).Record("rate_override").
			Field(func(c *Config) *float64 { return &c.Rate })
	timeoutSetting = durationSetting("timeout", 30*time.Second, "per request: an answer not complete by then is a failed request counted at the timeout").
			Accept(atLeast(time.Millisecond, "a positive duration, e.g. 30s")).Field(func(c *Config) *time.Duration { return &c.Timeout })
	hostRepeatsSetting = intSetting("host-repeats", DefaultHostRepeats, "a rate pass the host spoiled (steal, interrupts, other processes or CPU stalls past their thresholds) is run again up to this many times (0: never)").
				Quick(1).Accept(atLeast(0, "0 or more")).Field(func(c *Config) *int { return &c.HostRepeats })
)

var protocolSettings = []Setting{passesSetting, warmupsSetting, passDurationSetting, rateSetting, timeoutSetting, hostRepeatsSetting}

// declares is a workload with settings of its own.
type declares interface {
	Settings() []Setting
}

// validates is a workload that checks its settings together (one alone is
// checked by its declaration).
type validates interface {
	validate(c Config) error
}

// Settings are the protocol's settings, then every workload's in run
// order.
func Settings() []Setting {
	out := slices.Clone(protocolSettings)
	for _, w := range all {
		if d, ok := w.(declares); ok {
			out = append(out, d.Settings()...)
		}
	}
	return out
}

// LookupSetting is the setting of that name.
func LookupSetting(name string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// Record is c's settings as the run record keeps them: a map by key, a
// dotted key nested ("repeated_bans.for" under "repeated_bans"), with what
// a workload records besides its settings.
func (c Config) Record() map[string]any {
	out := map[string]any{}
	put := func(key string, v any) {
		m := out
		parts := strings.Split(key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	for _, s := range Settings() {
		put(s.record(c))
	}
	for _, w := range all {
		if r, ok := w.(recordsMore); ok {
			for k, v := range r.recordMore(c) {
				put(k, v)
			}
		}
	}
	return out
}

// recordsMore is a workload whose run record says more than its settings
// (a constant of its protocol).
type recordsMore interface {
	recordMore(c Config) map[string]any
}

// profileConfig is the defaults with the profile's values.
func profileConfig(p profile) Config {
	c := Config{}
	for _, s := range Settings() {
		s.profile(&c, reference)
	}
	for _, s := range Settings() {
		s.profile(&c, p)
	}
	return c
}
