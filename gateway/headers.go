package gateway

import "net/http"

// contentSecurityPolicy lets the web UI load only its own script, styles
// and images from the gateway's origin, and talk only to the gateway's
// own WebSocket: no inline script, no foreign origin, no framing by
// another page (clickjacking an answer), no form posting elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// secureHeaders sets the browser hardening headers on every response. The
// page's address may still carry the access token when it loads (the page
// removes it at once): no-referrer keeps it out of every request the page
// makes to anywhere.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
