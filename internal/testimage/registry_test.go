package testimage

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestRegistryServesTheDaemon: an image pushed to the loopback registry is
// known to the daemon's distribution inspect and pulled by digest, with
// the manifest digest and image ID Push returned.
func TestRegistryServesTheDaemon(t *testing.T) {
	daemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	reg, err := StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	bin, err := HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifest, id, err := reg.Push(ctx, "proofgate-test/pushed", "v1", HelperFiles(bin), "PG_PUSHED=1")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ref := reg.Host + "/proofgate-test/pushed"
	di, err := cli.DistributionInspect(ctx, ref+":v1", client.DistributionInspectOptions{})
	if err != nil || di.Descriptor.Digest.String() != manifest {
		t.Fatalf("distribution inspect = %+v, %v; want digest %s", di.Descriptor, err, manifest)
	}
	if _, err := cli.DistributionInspect(ctx, ref+":absent", client.DistributionInspectOptions{}); err == nil {
		t.Fatal("distribution inspect of an absent tag succeeded")
	}
	rc, err := cli.ImagePull(ctx, ref+"@"+manifest, client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref+"@"+manifest, client.ImageRemoveOptions{})
	})
	img, err := cli.ImageInspect(ctx, ref+"@"+manifest)
	if err != nil || img.ID != id {
		t.Fatalf("pulled image id %q, %v; want %s", img.ID, err, id)
	}
}
