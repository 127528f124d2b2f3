package keyless

import (
	"fmt"
	"net"
	"net/url"
)

// CheckServiceURL accepts an https URL, or an http URL of a loopback host
// (a local test instance): the OIDC token goes to Fulcio, and must never
// cross a network in the clear. Credentials, queries and fragments in the
// URL are refused.
func CheckServiceURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", v, err)
	}
	switch {
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q is not an absolute http(s) URL", v)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q has a query or fragment", v)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%q is plain http to a host that is not loopback: use https", v)
	}
	return fmt.Errorf("%q: scheme %q is not https", v, u.Scheme)
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
