package loadgen

import (
	"crypto/tls"

	"github.com/hlsbench/hlsbench/results"
)

// TLSInfo is what TLS a pass's connections negotiated, in the run
// file's schema.
type TLSInfo = results.GeneratorTLS

// tlsParams is what one handshake negotiated; zero before any.
type tlsParams struct {
	version, cipher uint16
	curve           tls.CurveID
}

func paramsOf(cs *tls.ConnectionState) tlsParams {
	return tlsParams{version: cs.Version, cipher: cs.CipherSuite, curve: cs.CurveID}
}

// tlsCounts are one shard's handshakes since the previous pass ended (or,
// merged, the generator's). Only the shard's own thread touches them.
type tlsCounts struct {
	first               tlsParams
	mixed               bool
	handshakes, resumed int64
}

func (t *tlsCounts) add(p tlsParams, resumed bool) {
	t.handshakes++
	if resumed {
		t.resumed++
	}
	t.note(p)
}

// note keeps the first parameters seen and flags any that differ.
func (t *tlsCounts) note(p tlsParams) {
	switch {
	case p == tlsParams{}:
	case t.first == tlsParams{}:
		t.first = p
	case p != t.first:
		t.mixed = true
	}
}

func (t *tlsCounts) merge(o *tlsCounts) {
	t.handshakes += o.handshakes
	t.resumed += o.resumed
	t.mixed = t.mixed || o.mixed
	t.note(o.first)
}

func (t *tlsCounts) info() *TLSInfo {
	i := &TLSInfo{Handshakes: t.handshakes, Resumed: t.resumed, Mixed: t.mixed}
	if t.first.version != 0 {
		i.Version, i.Cipher = tls.VersionName(t.first.version), tls.CipherSuiteName(t.first.cipher)
	}
	if t.first.curve != 0 {
		i.Curve = t.first.curve.String()
	}
	return i
}

// mergeTLS combines passes' TLS: counts add up, the first pass's
// parameters stand, and any difference is Mixed. Nil when no pass used TLS.
func mergeTLS(rs []*Result) *TLSInfo {
	var out *TLSInfo
	for _, r := range rs {
		t := r.TLS
		switch {
		case t == nil:
			continue
		case out == nil:
			c := *t
			out = &c
			continue
		}
		out.Handshakes += t.Handshakes
		out.Resumed += t.Resumed
		out.Mixed = out.Mixed || t.Mixed || t.Version != out.Version || t.Cipher != out.Cipher || t.Curve != out.Curve
	}
	return out
}
