package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/client"
)

// TestBaseImageCatalog: the operator's registry runs as docs/security.md
// says (a writable endpoint the operator pushes through, a read-only one
// agents pull from with the credential of --registry-credentials). An
// operator adds a base image through the CLI; a customer lists it, cannot
// change the catalog, rents by its name, and the instance runs the
// registry's image on a real Docker host that pulled it with the pull
// credential. An image of a registry the operator did not allow, and a
// catalog image on a GPU type it does not suit, are refused before
// anything is claimed.
func TestBaseImageCatalog(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "registry")
	push := dockertest.StartRegistryWith(t, dockertest.RegistryOptions{Dir: store, Users: map[string]string{"operator": "push-secret"}})
	pull := dockertest.StartRegistryWith(t, dockertest.RegistryOptions{Dir: store, ReadOnly: true,
		Users: map[string]string{"agents": "pull-secret"}})
	tag := "base/shell:" + strings.ToLower(gpurent.NewID("t")[2:10])
	if _, err := push.TryPush(t, dockertest.BusyboxImage(t), tag, "operator", "push-secret"); err != nil {
		t.Fatalf("the operator's push: %v", err)
	}
	ref := pull.Addr + "/" + tag
	t.Cleanup(func() { pull.Forget(t, ref) })

	credFile := filepath.Join(dir, "pull.cred")
	if err := os.WriteFile(credFile, []byte("agents:pull-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRegistryCredentials(credFile); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a credentials file others can read: %v", err)
	}
	if err := os.Chmod(credFile, 0o600); err != nil {
		t.Fatal(err)
	}
	cred, err := readRegistryCredentials(credFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(dir, "bad.db"), Listen: "127.0.0.1:0",
		Registry: RegistryConfig{URL: "http://agents:pull-secret@" + pull.Addr}}); err == nil ||
		!strings.Contains(err.Error(), "carries credentials") || strings.Contains(err.Error(), "pull-secret") {
		t.Fatalf("a registry URL with credentials in it: %v", err)
	}

	s, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0", BcryptCost: 4,
		PollWait: 5 * time.Second, BillingInterval: 300 * time.Millisecond,
		Registry: RegistryConfig{URL: "http://" + pull.Addr, Username: cred.Username, Password: cred.Password}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	scope := "img-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	as, err := StartAgents(ctx, AgentsConfig{ServerURL: s.URL, Join: s, DataDir: filepath.Join(dir, "agents"),
		Hosts:   []DemoHost{{Name: scope + "-a", Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 8, GroupSize: 8}},
		Catalog: c, Runtime: RuntimeDocker, HeartbeatInterval: 500 * time.Millisecond, RetryMax: time.Second, NoAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Stop()

	if _, err := s.Auth.CreateAccount(ctx, "ops@images.example", "Ops", "ops-password-12", gpurent.RoleOperator, 0); err != nil {
		t.Fatal(err)
	}
	ops := newUser(t, s.URL)
	if out, errOut, err := ops.run("ops-password-12\n", "login", "--email", "ops@images.example", "--password-stdin"); err != nil {
		t.Fatalf("operator login: %v %s%s", err, out, errOut)
	}
	out := ops.must("images", "add", "shell:1", ref, "--framework", "base", "--version", "busybox=1.36",
		"--description", "a shell, like every base image", "--gpu-types", "h100-80g-sxm", "--size-mib", "2")
	if !strings.Contains(out, "shell:1 is "+ref) {
		t.Fatalf("images add: %s", out)
	}
	ops.must("images", "add", "a100-only:1", ref, "--gpu-types", "a100-80g-sxm")
	// Another registry is refused for the catalog too: the operator's own
	// is the only one allowed when --image-registries is not set.
	if out, errOut, err := ops.run("", "images", "add", "hub:1", "busybox:1.36"); err == nil || !strings.Contains(err.Error()+errOut, "does not allow") {
		t.Fatalf("a Docker Hub image in a catalog limited to the operator's registry: %v %s%s", err, out, errOut)
	}

	alice := newUser(t, s.URL)
	alice.signUp("alice@images.example", "alice-password-1")
	if _, _, err := s.Wallet.Credit(ctx, &gpurent.Account{ID: "acc-ops", Role: gpurent.RoleOperator},
		accountID(t, alice), 100_000, "top-up", "images"); err != nil {
		t.Fatal(err)
	}
	var list []apiv1.BaseImage
	if err := json.Unmarshal([]byte(alice.must("images", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[1].Name != "shell:1" || list[1].Ref != ref || list[1].Versions["busybox"] != "1.36" || list[1].SizeBytes != 2<<20 {
		t.Fatalf("the customer's catalog: %+v", list)
	}
	if table := alice.must("images"); !strings.Contains(table, "shell:1") || !strings.Contains(table, "busybox 1.36") {
		t.Fatalf("images table:\n%s", table)
	}
	// The console's rent form offers the catalog, in both languages.
	login, err := client.New(s.URL, "", nil).Login(ctx, apiv1.LoginRequest{Email: "alice@images.example", Password: "alice-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	for lang, want := range map[string]string{"zh": "运营方的基础镜像(2 个)", "en": "The operator&#39;s base images (2)"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/rent?lang="+lang, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Cookie", "gpurent_session="+login.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		page := string(body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `list="rent-images"`) ||
			!strings.Contains(page, `<option value="shell:1">`) || !strings.Contains(page, want) {
			t.Errorf("the %s rent form (%d) offers no catalog picker saying %q:\n%s", lang, resp.StatusCode, want, page)
		}
	}
	// The operators' page lists the catalog.
	opsLogin, err := client.New(s.URL, "", nil).Login(ctx, apiv1.LoginRequest{Email: "ops@images.example", Password: "ops-password-12"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/ops/images?lang=zh", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", "gpurent_session="+opsLogin.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if page := string(body); resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="image-shell:1"`) || !strings.Contains(page, ref) ||
		!strings.Contains(page, "基础镜像目录") {
		t.Errorf("the operators' catalog page (%d):\n%s", resp.StatusCode, page)
	}
	// A customer cannot change the catalog.
	for _, args := range [][]string{{"images", "add", "evil:1", ref}, {"images", "rm", "shell:1"}, {"images", "prepull", "shell:1"}} {
		if out, errOut, err := alice.run("", args...); err == nil || !strings.Contains(err.Error()+errOut, "operators only") {
			t.Errorf("customer: gpurent %s: %v %s%s, want refused for operators only", strings.Join(args, " "), err, out, errOut)
		}
	}
	eventually(t, "the host's 8 H100s listed free", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 8 })

	// Refused before anything is claimed: no instance, no GPU held.
	for image, want := range map[string]string{"busybox:1.36": "does not allow", "ghcr.io/evil/x:1": "does not allow",
		"127.0.0.1:1/x:1": "loopback", "a100-only:1": "suits GPU types a100-80g-sxm only"} {
		if out, errOut, err := alice.run("", "rent", "--gpu", "h100-80g-sxm", "--count", "1", "--image", image); err == nil ||
			!strings.Contains(err.Error()+errOut, want) {
			t.Errorf("rent --image %s: %v %s%s, want refused saying %q", image, err, out, errOut, want)
		}
	}
	var none apiv1.InstanceList
	if err := json.Unmarshal([]byte(alice.must("ls", "-o", "json")), &none); err != nil || len(none.Instances) != 0 {
		t.Fatalf("refused rents left instances: %v %s", err, alice.must("ls"))
	}
	if n := freeGPUs(t, alice, "h100-80g-sxm"); n != 8 {
		t.Fatalf("refused rents hold GPUs: %d free", n)
	}

	// Pre-pulled: the agent pulls it (with the pull credential) before any
	// rent and reports that it holds it.
	cli := dockertest.Client(t)
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		t.Fatal("the image is on the Docker host before any pull")
	}
	if out := ops.must("images", "prepull", "shell:1"); !strings.Contains(out, "Every host now pulls shell:1") {
		t.Fatalf("images prepull: %s", out)
	}
	eventually(t, "the host reports it holds the pre-pulled image", func() bool {
		ids, err := s.Store.HostsHolding(ctx, ref)
		return err == nil && len(ids) == 1
	})
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("the pre-pulled image is not on the Docker host: %v", err)
	}

	in := alice.instance("rent", "--gpu", "h100-80g-sxm", "--count", "1", "--image", "shell:1", "--wait")
	if in.State != "running" || in.Image != ref {
		t.Fatalf("rent by catalog name: state %s image %q, want running %s", in.State, in.Image, ref)
	}
	t.Cleanup(func() { dockertest.Cleanup(t, in.ID) })
	ct := dockertest.Inspect(t, cli, dockertest.InstanceContainer(t, cli, in.ID))
	if ct.Config.Image != ref || ct.State == nil || !ct.State.Running {
		t.Fatalf("the container: image %s, state %+v", ct.Config.Image, ct.State)
	}
	alice.must("rm", in.ID, "--yes")
}

// accountID is the signed-in user's account id.
func accountID(t *testing.T, u *user) string {
	t.Helper()
	var acc apiv1.Account
	if err := json.Unmarshal([]byte(u.must("whoami", "-o", "json")), &acc); err != nil {
		t.Fatal(err)
	}
	return acc.ID
}
