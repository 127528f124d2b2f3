package keyless

import (
	"testing"
)

func TestCheckServiceURL(t *testing.T) {
	for _, ok := range []string{"https://fulcio.sigstore.dev", "https://timestamp.sigstore.dev/api/v1/timestamp", "http://127.0.0.1:5555", "http://[::1]:80/api/v1/timestamp", "http://localhost:1"} {
		if err := CheckServiceURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1", "http://127.0.0.1.evil.example", "https://u@x.example", "https://x.example/?a=b", "https://x.example/#f", "ftp://x.example", "mailto:a@b", "x.example", "https://", "http://localhost.evil.example"} {
		if err := CheckServiceURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "10.0.0.1": false, "localhost.evil.example": false, "": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("%q: %v, want %v", host, got, want)
		}
	}
}
