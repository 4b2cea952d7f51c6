package origin

import "testing"

func TestReadyLineRoundTrip(t *testing.T) {
	line := ReadyLine("127.0.0.1:8081", "127.0.0.1:9091")
	if line != "origin: data http://127.0.0.1:8081 control http://127.0.0.1:9091" {
		t.Fatalf("ReadyLine = %q", line)
	}
	data, control, err := ParseReady(line[len(ReadyPrefix):])
	if err != nil || data != "http://127.0.0.1:8081" || control != "http://127.0.0.1:9091" {
		t.Errorf("ParseReady = %q, %q, %v", data, control, err)
	}
	if _, _, err := ParseReady("data http://x"); err == nil {
		t.Error("ParseReady accepted a short line")
	}
}
