package server

import "net/http"

func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not_implemented", "the AG-UI endpoint is not built yet", nil)
}
