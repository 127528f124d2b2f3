// Command ensure imports the sandbox test image into the local Docker daemon
// (building its static helper first) and prints the image reference. The
// benchmarks and examples use it; tests call testimage.Ensure directly.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/testimage"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref, err := testimage.Ensure(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}
