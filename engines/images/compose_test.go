package images

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The compose file's stack keeps hlsbench's rules: every service on the
// host's network (no bridge), from an hlsbench image, listening and
// fetching on loopback only.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Image       string `yaml:"image"`
			NetworkMode string `yaml:"network_mode"`
			Ports       []any  `yaml:"ports"`
			Networks    any    `yaml:"networks"`
			Command     any    `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, want := range []string{"origin", "varnish", "nginx", "builtin"} {
		if _, ok := f.Services[want]; !ok {
			t.Errorf("no %s service", want)
		}
	}
	addr := regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?`)
	for name, s := range f.Services {
		if s.NetworkMode != "host" || s.Networks != nil || len(s.Ports) > 0 {
			t.Errorf("%s: network_mode %q, networks %v, ports %v; want the host's network only", name, s.NetworkMode, s.Networks, s.Ports)
		}
		if !strings.HasPrefix(s.Image, Repository+"/") {
			t.Errorf("%s: image %q, want one of hlsbench images build's", name, s.Image)
		}
		cmd, _ := yaml.Marshal(s.Command)
		for _, m := range addr.FindAllStringSubmatch(string(cmd), -1) {
			if m[1] != "127.0.0.1" {
				t.Errorf("%s: address %s, want 127.0.0.1 only", name, m[0])
			}
		}
		if !strings.Contains(string(cmd), "127.0.0.1") {
			t.Errorf("%s: no loopback address in its command %s", name, cmd)
		}
	}
}
