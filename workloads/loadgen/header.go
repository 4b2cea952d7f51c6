package loadgen

import "bytes"

// HeaderValue finds the line "Name: value" in a raw header block
// (ResponseInfo.Header), key being "Name:", case-insensitively; nil when
// absent.
func HeaderValue(h, key []byte) []byte {
	for len(h) > 0 {
		i := bytes.IndexByte(h, '\n')
		line := h
		if i >= 0 {
			line, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		if len(line) > len(key) && bytes.EqualFold(line[:len(key)], key) {
			return bytes.TrimSpace(line[len(key):])
		}
	}
	return nil
}

// HeaderInt reads a decimal header value; 0 when absent or not a number.
func HeaderInt(h, key []byte) int64 {
	var n int64
	for _, c := range HeaderValue(h, key) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
