package sidecar

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// The admin token guards the POST endpoints that change state (POST
// /-/reload). It is read once, when the App is built, from
// http.admin_token_file: the file's content without surrounding white
// space (a trailing newline is usual in a Kubernetes Secret). Only its
// SHA-256 is kept, and the request's token is hashed the same way before a
// constant-time compare, so neither the token nor its length leaks
// through timing. The token is never logged nor put in an error.

// loadAdminToken reads the token file; nil when path is empty.
func loadAdminToken(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said below; the error holds no content anyway
		}
		return nil, fmt.Errorf("http.admin_token_file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return nil, fmt.Errorf("http.admin_token_file %s: the file is empty", path)
	}
	sum := sha256.Sum256([]byte(tok))
	return sum[:], nil
}

// authorized answers 401 and returns false unless the request carries the
// admin token as "Authorization: Bearer <token>" (or no token is
// configured).
func (a *App) authorized(w http.ResponseWriter, r *http.Request) bool {
	if a.adminToken == nil {
		return true
	}
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		sum := sha256.Sum256([]byte(strings.TrimSpace(h[len(prefix):])))
		if subtle.ConstantTimeCompare(sum[:], a.adminToken) == 1 {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="shadoweval"`)
	http.Error(w, "Unauthorized: this endpoint wants the admin token as Authorization: Bearer <token>", http.StatusUnauthorized)
	return false
}
