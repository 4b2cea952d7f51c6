package workloads

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Every setting reads back what it writes, in every profile, and a
// value it does not accept is a *FieldError naming it.
func TestSettingsRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range []Config{Defaults(), Quick(), Nightly()} {
		for _, s := range Settings() {
			if seen[s.Name()] && p.Passes == Defaults().Passes {
				t.Errorf("setting %s declared twice", s.Name())
			}
			seen[s.Name()] = true
			text := s.Text(p)
			var c Config
			if err := s.Set(&c, text); err != nil {
				t.Errorf("%s: %q does not read back: %v", s.Name(), text, err)
				continue
			}
			if got := s.Text(c); got != text {
				t.Errorf("%s: %q reads back as %q", s.Name(), text, got)
			}
		}
		if err := p.Validate(); err != nil {
			t.Errorf("a profile does not validate: %v", err)
		}
	}
	for name, bad := range map[string]string{"passes": "0", "clients": "20000", "vod-share": "1.5", "fail-mode": "melt",
		"purge-method": "GET", "ban-for": "1s", "store-sizes": "64KiB", "slo": "video=p99:1ms", "pass-duration": "soon"} {
		s, ok := LookupSetting(name)
		if !ok {
			t.Fatalf("no setting %s", name)
		}
		var fe *FieldError
		if err := s.Set(&Config{}, bad); !errors.As(err, &fe) || fe.Field != name || !strings.Contains(fe.Msg, "want") {
			t.Errorf("%s %q: %v, want a field error saying what is accepted", name, bad, err)
		}
	}
}

// The run record keeps the keys it had before the settings were declared
// in their workloads' files: scripts read them.
func TestSettingsRecordKeys(t *testing.T) {
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			keys = append(keys, prefix+k)
		}
	}
	walk("", Defaults().Record())
	sort.Strings(keys)
	for _, k := range []string{"passes", "warmups", "pass_duration", "rate_override", "host_repeats", "fail_mode", "timeout",
		"miss_storm_clients", "origin_flap.cycles", "origin_flap.healthy_phase", "origin_flap.fail_phase",
		"purge_stampede.mode", "purge_stampede.method", "purge_stampede.before", "purge_stampede.after",
		"repeated_bans.passes", "repeated_bans.for", "repeated_bans.every",
		"live_audience.viewers", "live_audience.channels", "live_audience.titles", "live_audience.ladder_bps",
		"live_audience.target_duration", "live_audience.zipf", "live_audience.vod_share", "live_audience.switch_share",
		"live_audience.ramp", "live_audience.watch", "live_audience.passes", "live_audience.store_sizes",
		"capacity.slo", "capacity.searches", "capacity.max_probes", "capacity.probe_warmup", "capacity.probe_duration"} {
		if !slices.Contains(keys, k) {
			t.Errorf("the run record lost %s (has %v)", k, keys)
		}
	}
	r := Quick().Record()
	if r["pass_duration"] != "2s" || r["origin_flap"].(map[string]any)["cycles"] != 3 {
		t.Errorf("quick record: pass_duration %v, origin_flap %v", r["pass_duration"], r["origin_flap"])
	}
}

// The profiles' help texts name what they change.
func TestProfileText(t *testing.T) {
	if q := QuickText(); !strings.Contains(q, "passes 3 (instead of 20)") || !strings.Contains(q, "ban-for 5s (instead of 20s)") {
		t.Errorf("QuickText: %s", q)
	}
	if n := NightlyText(); !strings.Contains(n, "passes 10 (instead of 20)") || strings.Contains(n, "clients") {
		t.Errorf("NightlyText: %s", n)
	}
}
