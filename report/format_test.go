package report

import "testing"

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.0652, "ms", "0.0652 ms"},
		{0.065249, "ms", "0.0652 ms"},
		{1.05, "ms", "1.05 ms"},
		{53.94, "ms", "53.9 ms"},
		{200, "x", "200 x"},
		{100, "%", "100 %"},
		{1050, "", "1050"},
		{1049.9, "req/s", "1050 req/s"},
		{123456, "", "123000"},
		{9.996, "", "10.0"},
		{2, "x", "2.00 x"},
		{0, "ms", "0 ms"},
		{-0.5, "", "-0.500"},
		{0.000123456, "", "0.000123"},
		{1051, "ms", "1.05 s"},
	} {
		if got := formatValue(c.v, c.unit); got != c.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	for in, want := range map[string]string{
		"varnish":               "Varnish",
		"varnish@9.0.2":         "Varnish 9.0.2",
		"vinyl@trunk-27d2ce15b": "Vinyl Cache trunk-27d2ce15b",
		"squid":                 "squid",
		"squid@6":               "squid@6",
	} {
		if got := displayName(in); got != want {
			t.Errorf("displayName(%q) = %q, want %q", in, got, want)
		}
	}
	if baseEngine("varnish@9.0.2") != "varnish" || baseEngine("nginx") != "nginx" {
		t.Error("baseEngine")
	}
}

// The interrupts on the engine's CPUs are said beside its CPU-ms when they
// were measured, and a test whose interrupts differ is a row of its own.
func TestCostCPUTextInterrupts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := Cost{CPUMsPer1000: f(716), IRQ: f(35), NetIRQ: f(33)}
	if got, want := c.CPUText(), "716 (interrupts 35 % of its CPU, 33 % network softirqs)"; got != want {
		t.Errorf("cost %q, want %q", got, want)
	}
	if got := (Cost{CPUMsPer1000: f(716)}).CPUText(); got != "716" {
		t.Errorf("cost without interrupts %q, want 716", got)
	}
	cs := addCost(addCost(nil, c, "full p50"), Cost{CPUMsPer1000: f(716), IRQ: f(6), NetIRQ: f(5)}, "range p50")
	if len(cs) != 2 {
		t.Errorf("costs %+v: want two rows, their interrupts differ", cs)
	}
}
