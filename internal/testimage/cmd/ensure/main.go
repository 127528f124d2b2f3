// Command ensure imports the sandbox test image into the local Docker daemon
// (building its static helper first) and prints the image reference; with
// -go it imports and prints the Go toolchain image instead. The benchmarks
// and examples use it; tests call testimage.Ensure or EnsureGo directly.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/testimage"
)

func main() {
	goImage := flag.Bool("go", false, "import the Go toolchain image (testimage.EnsureGo)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ensure := testimage.Ensure
	if *goImage {
		ensure = testimage.EnsureGo
	}
	ref, err := ensure(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}
