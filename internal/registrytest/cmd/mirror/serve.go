package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// serve runs the registry until killed. It listens on loopback only.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:5391", "loopback `host:port` to listen on")
	dir := fs.String("dir", "", "state `directory`; blobs are kept in its blobs/ (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("serve: -dir is required")
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("serve: -addr %q: want a loopback ip:port such as 127.0.0.1:5391", *addr)
	}
	blobs := filepath.Join(*dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	srv := &http.Server{
		Handler:           registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)), registry.Logger(logger)),
		ReadHeaderTimeout: 30 * time.Second,
	}
	logger.Printf("registry on http://%s, blobs in %s", ln.Addr(), blobs)
	return srv.Serve(ln)
}
