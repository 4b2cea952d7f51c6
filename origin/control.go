package origin

import (
	"encoding/json"
	"net/http"
)

// Control is the control API, meant for a listener of its own (see Server):
//
//	GET  /healthz             200 "ok": the control API is up
//	GET  /mode                {"mode": "healthy"}
//	POST /mode?set=MODE       MODE is healthy, 5xx, refuse or drop; {"mode": MODE}, 400 for another
//	GET  /stats               Stats as JSON, with the mode and the instant it took effect
//	POST /stats/reset         zero the counters; the answer is Stats as they were
//
// POST /mode answers 500 when a Server could not apply the mode at once
// (listening again failed); it keeps trying.
func (o *Origin) Control() http.Handler { return o.control }

type modeAnswer struct {
	Mode  Mode   `json:"mode"`
	Error string `json:"error,omitempty"`
}

func (o *Origin) newControl() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /mode", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, modeAnswer{Mode: o.Mode()})
	})
	mux.HandleFunc("POST /mode", func(w http.ResponseWriter, r *http.Request) {
		m, err := ParseMode(r.URL.Query().Get("set"))
		if err != nil {
			http.Error(w, "POST /mode?set=: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := o.setMode(m); err != nil {
			writeJSON(w, http.StatusInternalServerError, modeAnswer{Mode: m, Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, modeAnswer{Mode: m})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, o.snapshot(false))
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, o.snapshot(true))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
