package registrytest

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/testimage"
)

// TestPushFilesServesTheDaemon: an image pushed to the loopback registry
// is known to the daemon's distribution inspect and pulled by digest, with
// the manifest digest and image ID PushFiles returned.
func TestPushFilesServesTheDaemon(t *testing.T) {
	testimage.RequireDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	reg := Start()
	defer reg.Close()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifest, id, err := reg.PushFiles(ctx, "proofgate-test/pushed", "v1", testimage.HelperFiles(bin), "PG_PUSHED=1")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ref := reg.Host() + "/proofgate-test/pushed"
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
