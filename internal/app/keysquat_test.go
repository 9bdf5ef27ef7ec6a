package app

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestSquattedKeyReachesOwner: bob registers alice's public key before she
// does (public keys are public). Alice still adds it and, with the real
// OpenSSH client through the gateway, reaches her instance with it; bob,
// with his own key, still cannot reach alice's instance.
func TestSquattedKeyReachesOwner(t *testing.T) {
	f := startDockerFleet(t, "squat", "rtx4090-24g", 1)
	f.credit(t, 100_000, "seed")
	bob := newSSHUser(t, f, "bob-squat@lab.example")
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@squat", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	bob.must("ssh-key", "add", key+".pub") // the squatter is first
	f.u.must("ssh-key", "add", key+".pub") // and the owner is not locked out
	alice := &sshUser{user: f.u, key: key}

	in := alice.instance("rent", "--gpu", "rtx4090-24g", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	alice.must("ssh", in.ID, "--print") // pins the gateway's host key
	acc := gatewayAccess(t, f)
	target := in.ID + "@" + acc.Host
	if out, errOut, code := command(t, "", "ssh", append(alice.sshArgs(t, acc, "-p"), target, "echo", "owner-in")...); code != 0 ||
		!strings.Contains(out, "owner-in") {
		t.Fatalf("alice with her key after bob registered it: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := command(t, "", "ssh", append(bob.sshArgsWithKnown(t, acc, alice), target, "true")...); code == 0 ||
		!strings.Contains(errOut, "no instance") {
		t.Fatalf("bob into alice's instance: %d %s %s", code, out, errOut)
	}
}

// gatewayAccess is where the fleet's SSH gateway listens.
func gatewayAccess(t testing.TB, f *dockerFleet) apiv1.InstanceAccess {
	t.Helper()
	host, portText, err := net.SplitHostPort(f.s.SSHAddr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	return apiv1.InstanceAccess{Host: host, Port: port}
}
