package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// Run runs the conformance suite. open must return a new, empty store for
// each call (it is called once per subtest) and arrange its cleanup.
func Run(t *testing.T, open func(t *testing.T) gpurent.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s gpurent.Store)
	}{
		{"Backend", testBackend},
		{"Accounts", testAccounts},
		{"Tokens", testTokens},
		{"AccountByTokenHash", testAccountByTokenHash},
		{"Credentials", testCredentials},
		{"Catalog", testCatalog},
		{"BaseImages", testBaseImages},
		{"HostImages", testHostImages},
		{"Hosts", testHosts},
		{"SyncHostGPUs", testSyncHostGPUs},
		{"ListHostsHolders", testListHostsHolders},
		{"Instances", testInstances},
		{"UpdateInstance", testUpdateInstance},
		{"StartupCommand", testStartupCommand},
		{"StartupStatus", testStartupStatus},
		{"StartupStatusConcurrent", testStartupStatusConcurrent},
		{"ListInstances", testListInstances},
		{"InstanceAllocationFields", testInstanceAllocationFields},
		{"Allocations", testAllocations},
		{"AllocationConflictWritesNothing", testAllocationConflictWritesNothing},
		{"AllocationConflictInTx", testAllocationConflictInTx},
		{"EndAllocation", testEndAllocation},
		{"Volumes", testVolumes},
		{"Events", testEvents},
		{"Idempotency", testIdempotency},
		{"PriceVersions", testPriceVersions},
		{"Academic", testAcademic},
		{"UsageRuns", testUsageRuns},
		{"IngestRunEvents", testIngestRunEvents},
		{"PostRunDebits", testPostRunDebits},
		{"SpendLimits", testSpendLimits},
		{"RunwayAlerts", testRunwayAlerts},
		{"LedgerPost", testLedgerPost},
		{"LedgerPostInTx", testLedgerPostInTx},
		{"LedgerConcurrentDebits", testLedgerConcurrentDebits},
		{"LedgerBalancesKept", testLedgerBalancesKept},
		{"Vouchers", testVouchers},
		{"Payments", testPayments},
		{"PlanChanges", testPlanChanges},
		{"Operations", testOperationRoundTrip},
		{"OperationOneActive", testOperationOneActive},
		{"OperationIdempotency", testOperationIdempotency},
		{"UpdateOperation", testOperationUpdate},
		{"OperationValidation", testOperationValidation},
		{"ListOperations", testOperationList},
		{"OperationConflictInTx", testOperationConflictInTx},
		{"UpdateInstanceResources", testUpdateInstanceResources},
		{"SetVolumeHost", testSetVolumeHost},
		{"GPUEvents", testGPUEvents},
		{"GPUEventsRefused", testGPUEventsRefused},
		{"SetGPUHealth", testSetGPUHealth},
		{"Incidents", testIncidents},
		{"ListIncidents", testListIncidents},
		{"IncidentEntries", testIncidentEntries},
		{"InstanceFailover", testInstanceFailover},
		{"Access", testAccess},
		{"InTx", testInTx},
		{"TimesUTC", testTimesUTC},
		{"AllocationRace", testAllocationRace},
		{"BenchJobs", testBenchJobs},
		{"BenchHolds", testBenchHolds},
		{"BenchFinishAtomic", testBenchFinishAtomic},
		{"BenchFinishNext", testBenchFinishNext},
		{"BenchRecords", testBenchRecords},
		{"BenchSummaries", testBenchSummaries},
		{"GPUCerts", testGPUCerts},
		{"CertSettings", testCertSettings},
		{"PricePermille", testPricePermille},
		{"BenchAllocationRace", testBenchAllocationRace},
		// Per-host join tokens and agent credentials (issue 14).
		{"JoinTokens", testJoinTokens},
		{"JoinTokenRace", testJoinTokenRace},
		{"CreateHostNeverUpdates", testCreateHostNeverUpdates},
		{"GPUNeverMovesFromLiveHost", testGPUNeverMovesFromLiveHost},
		// Issue 14 (domain findings).
		{"IdleRunFlags", testIdleRunFlags},
		{"EmailVerifications", testEmailVerifications},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// wantCode fails unless err carries code.
func wantCode(t testing.TB, err error, code gpurent.Code, what string) {
	t.Helper()
	if gpurent.ErrorCode(err) != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, gpurent.ErrorCode(err), code)
	}
}

// must fails on err.
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// same fails unless got deep-equals want.
func same(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// at is a fixed instant with sub-second digits, in a zone that is not UTC,
// so that normalisation shows.
func at(sec int) time.Time {
	cst := time.FixedZone("CST", 8*3600)
	return time.Date(2025, 3, 1, 20, 0, sec, 123456789, cst)
}

func testBackend(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	must(t, s.Ping(ctx), "ping")
	if b := s.Backend(); b != "sqlite" && b != "postgres" {
		t.Fatalf("Backend() = %q, want sqlite or postgres", b)
	}
	// SQLite's file is held by this one process; PostgreSQL may be shared
	// by replicas, whose writes this process must poll for.
	if got, want := s.SoleWriter(), s.Backend() == "sqlite"; got != want {
		t.Fatalf("SoleWriter() = %v on %s, want %v", got, s.Backend(), want)
	}
}

func testAccounts(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := &gpurent.Account{Email: "Alice@Example.COM", Name: "Alice", Role: gpurent.RoleOperator,
		PasswordHash: "$argon2id$v=19$...", BalanceFen: -12345, CreatedAt: at(1)}
	must(t, s.CreateAccount(ctx, a), "create account")
	if !strings.HasPrefix(a.ID, gpurent.PrefixAccount+"-") {
		t.Fatalf("account id %q not generated with prefix", a.ID)
	}
	if a.Email != "alice@example.com" {
		t.Fatalf("email stored as %q, want lower-case", a.Email)
	}
	got, err := s.AccountByID(ctx, a.ID)
	must(t, err, "account by id")
	same(t, "account round trip", got, a)
	if !got.CreatedAt.Equal(at(1).Truncate(time.Microsecond)) {
		t.Fatalf("created_at %v, want %v at microsecond precision", got.CreatedAt, at(1))
	}

	got, err = s.AccountByEmail(ctx, "ALICE@example.com")
	must(t, err, "account by email, other case")
	same(t, "account by email", got, a)

	err = s.CreateAccount(ctx, &gpurent.Account{Email: "alice@EXAMPLE.com", Role: gpurent.RoleCustomer})
	wantCode(t, err, gpurent.CodeConflict, "same email in another case")
	err = s.CreateAccount(ctx, &gpurent.Account{ID: a.ID, Email: "other@example.com", Role: gpurent.RoleCustomer})
	wantCode(t, err, gpurent.CodeConflict, "same id")
	wantCode(t, s.CreateAccount(ctx, &gpurent.Account{}), gpurent.CodeInvalid, "no email")

	_, err = s.AccountByID(ctx, "acc-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing account by id")
	_, err = s.AccountByEmail(ctx, "nobody@example.com")
	wantCode(t, err, gpurent.CodeNotFound, "missing account by email")

	b := &gpurent.Account{Email: "bob@example.com", Role: gpurent.RoleCustomer, CreatedAt: at(0)}
	must(t, s.CreateAccount(ctx, b), "create second account")
	list, err := s.ListAccounts(ctx)
	must(t, err, "list accounts")
	same(t, "accounts, oldest first", list, []gpurent.Account{*b, *a})
}

func testTokens(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "t@example.com")
	exp := at(30)
	tok := &gpurent.Token{AccountID: acc.ID, Kind: gpurent.TokenSession, Name: "login", Hash: "h1",
		CreatedAt: at(1), ExpiresAt: &exp}
	must(t, s.CreateToken(ctx, tok), "create token")
	if !strings.HasPrefix(tok.ID, gpurent.PrefixToken+"-") {
		t.Fatalf("token id %q not generated", tok.ID)
	}
	got, err := s.TokenByHash(ctx, "h1")
	must(t, err, "token by hash")
	same(t, "session token round trip", got, tok)

	api := &gpurent.Token{AccountID: acc.ID, Kind: gpurent.TokenAPI, Name: "ci", Hash: "h2", CreatedAt: at(2)}
	must(t, s.CreateToken(ctx, api), "create api token")
	got, err = s.TokenByHash(ctx, "h2")
	must(t, err, "api token by hash")
	same(t, "api token (no expiry) round trip", got, api)

	err = s.CreateToken(ctx, &gpurent.Token{AccountID: acc.ID, Kind: gpurent.TokenAPI, Hash: "h1"})
	wantCode(t, err, gpurent.CodeConflict, "same hash")
	err = s.CreateToken(ctx, &gpurent.Token{AccountID: "acc-missing", Kind: gpurent.TokenAPI, Hash: "h3"})
	wantCode(t, err, gpurent.CodeInvalid, "token of a missing account")

	_, err = s.TokenByHash(ctx, "nope")
	wantCode(t, err, gpurent.CodeNotFound, "missing hash")
	_, err = s.TokenByHash(ctx, "")
	wantCode(t, err, gpurent.CodeNotFound, "empty hash")

	must(t, s.DeleteToken(ctx, tok.ID), "delete token")
	_, err = s.TokenByHash(ctx, "h1")
	wantCode(t, err, gpurent.CodeNotFound, "deleted token")
	wantCode(t, s.DeleteToken(ctx, tok.ID), gpurent.CodeNotFound, "delete again")
	if _, err := s.TokenByHash(ctx, "h2"); err != nil {
		t.Fatalf("deleting one token removed another: %v", err)
	}
}

func testAccountByTokenHash(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	alice := &gpurent.Account{Email: "alice@example.com", Name: "Alice", Role: gpurent.RoleOperator,
		PasswordHash: "pw-a", BalanceFen: 4200, CreatedAt: at(1)}
	must(t, s.CreateAccount(ctx, alice), "create alice")
	bob := &gpurent.Account{Email: "bob@example.com", Name: "Bob", Role: gpurent.RoleCustomer,
		PasswordHash: "pw-b", BalanceFen: -7, CreatedAt: at(2)}
	must(t, s.CreateAccount(ctx, bob), "create bob")

	// Long expired: the store still answers, with ExpiresAt, and the
	// caller decides.
	past := at(3)
	expired := &gpurent.Token{AccountID: alice.ID, Kind: gpurent.TokenSession, Name: "old login",
		Hash: "hash-expired", CreatedAt: at(1), ExpiresAt: &past}
	must(t, s.CreateToken(ctx, expired), "create expired token")
	api := &gpurent.Token{AccountID: alice.ID, Kind: gpurent.TokenAPI, Name: "ci", Hash: "hash-api", CreatedAt: at(4)}
	must(t, s.CreateToken(ctx, api), "create api token")
	future := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	bobTok := &gpurent.Token{AccountID: bob.ID, Kind: gpurent.TokenSession, Name: "login",
		Hash: "hash-bob", CreatedAt: at(5), ExpiresAt: &future}
	must(t, s.CreateToken(ctx, bobTok), "create bob's token")

	for _, c := range []struct {
		hash    string
		account *gpurent.Account
		token   *gpurent.Token
	}{
		{"hash-api", alice, api},
		{"hash-expired", alice, expired},
		{"hash-bob", bob, bobTok},
	} {
		acc, tok, err := s.AccountByTokenHash(ctx, c.hash)
		must(t, err, "account by token hash "+c.hash)
		same(t, "account of "+c.hash, acc, c.account)
		same(t, "token of "+c.hash, tok, c.token)
		// The joined read agrees with the two reads it replaces.
		alone, err := s.TokenByHash(ctx, c.hash)
		must(t, err, "token by hash "+c.hash)
		same(t, "joined token vs TokenByHash", tok, alone)
		byID, err := s.AccountByID(ctx, tok.AccountID)
		must(t, err, "account by id "+tok.AccountID)
		same(t, "joined account vs AccountByID", acc, byID)
	}
	if _, tok, _ := s.AccountByTokenHash(ctx, "hash-expired"); tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(past.Truncate(time.Microsecond)) {
		t.Fatalf("expired token's ExpiresAt = %v, want %v", tok.ExpiresAt, past)
	}

	for _, hash := range []string{"nope", "", "HASH-API", "hash-api "} {
		acc, tok, err := s.AccountByTokenHash(ctx, hash)
		wantCode(t, err, gpurent.CodeNotFound, fmt.Sprintf("unknown hash %q", hash))
		if acc != nil || tok != nil {
			t.Fatalf("unknown hash %q returned account %+v token %+v", hash, acc, tok)
		}
	}

	// A deleted token no longer finds its account; the other tokens of
	// that account still do.
	must(t, s.DeleteToken(ctx, api.ID), "delete api token")
	_, _, err := s.AccountByTokenHash(ctx, "hash-api")
	wantCode(t, err, gpurent.CodeNotFound, "deleted token")
	if _, _, err := s.AccountByTokenHash(ctx, "hash-expired"); err != nil {
		t.Fatalf("deleting one token hid another of the same account: %v", err)
	}

	// Inside a transaction it sees the transaction's own writes.
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		in := &gpurent.Token{AccountID: bob.ID, Kind: gpurent.TokenAPI, Name: "in tx", Hash: "hash-tx", CreatedAt: at(6)}
		if err := q.CreateToken(ctx, in); err != nil {
			return err
		}
		acc, tok, err := q.AccountByTokenHash(ctx, "hash-tx")
		if err != nil {
			return err
		}
		if acc.ID != bob.ID || tok.ID != in.ID {
			return fmt.Errorf("in tx: got account %s token %s, want %s %s", acc.ID, tok.ID, bob.ID, in.ID)
		}
		return nil
	}), "token created and read in one transaction")
}

func testCatalog(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h100 := gpurent.GPUType{ID: "h100-80g-sxm", Name: "NVIDIA H100 80GB SXM", MemoryGB: 80,
		MemBandwidthGBs: 3350, FP32TFLOPS: 66.9, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, NVLinkGBs: 900,
		PeerToPeer: true, TDPWatts: 700, PCIeGen: 5, CPUMilliPerGPU: 16000, MemoryMiBPerGPU: 196608,
		PriceHourlyFen: 1899, PriceDailyFen: 41000, PriceWeeklyFen: 260000, PriceMonthlyFen: 990000}
	rtx := gpurent.GPUType{ID: "rtx4090-24g", Name: "NVIDIA GeForce RTX 4090", MemoryGB: 24,
		MemBandwidthGBs: 1008, FP32TFLOPS: 82.6, BF16TFLOPS: 165.2, FP8TFLOPS: 330.3, TDPWatts: 450,
		PCIeGen: 4, CPUMilliPerGPU: 12000, MemoryMiBPerGPU: 65536, PriceHourlyFen: 199}
	must(t, s.UpsertGPUType(ctx, rtx), "upsert rtx")
	must(t, s.UpsertGPUType(ctx, h100), "upsert h100")
	got, err := s.GPUType(ctx, h100.ID)
	must(t, err, "GPU type")
	same(t, "GPU type round trip", *got, h100)

	h100.PriceHourlyFen = 1799
	h100.PeerToPeer = false
	h100.Name = "H100 SXM5"
	must(t, s.UpsertGPUType(ctx, h100), "update h100")
	types, err := s.GPUTypes(ctx)
	must(t, err, "GPU types")
	same(t, "GPU types by id, updated", types, []gpurent.GPUType{h100, rtx})
	_, err = s.GPUType(ctx, "b200")
	wantCode(t, err, gpurent.CodeNotFound, "missing GPU type")
	wantCode(t, s.UpsertGPUType(ctx, gpurent.GPUType{}), gpurent.CodeInvalid, "GPU type without id")

	zb := gpurent.Zone{ID: "cd-tianfu-b", Name: "Chengdu Tianfu B", Region: "chengdu", ProbeURL: "https://b.example/probe"}
	za := gpurent.Zone{ID: "cd-tianfu-a", Name: "Chengdu Tianfu A", Region: "chengdu", ProbeURL: "https://a.example/probe"}
	must(t, s.UpsertZone(ctx, zb), "upsert zone b")
	must(t, s.UpsertZone(ctx, za), "upsert zone a")
	z, err := s.Zone(ctx, za.ID)
	must(t, err, "zone")
	same(t, "zone round trip", *z, za)
	za.Name = "Chengdu Tianfu Software Park A"
	must(t, s.UpsertZone(ctx, za), "update zone a")
	zones, err := s.Zones(ctx)
	must(t, err, "zones")
	same(t, "zones by id, updated", zones, []gpurent.Zone{za, zb})
	_, err = s.Zone(ctx, "nowhere")
	wantCode(t, err, gpurent.CodeNotFound, "missing zone")
}

func testHosts(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	seen := at(5)
	h := &gpurent.Host{Name: "gpu-node-01", ZoneID: "cd-a", State: gpurent.HostCordoned, CPUMilli: 128000,
		MemoryMiB: 1 << 20, DiskGiB: 7680, Runtime: "docker", AgentVersion: "1.0.0", AgentTokenHash: "agent-hash-1",
		Generation: 7, LastSeenAt: &seen, RegisteredAt: at(1)}
	must(t, s.UpsertHost(ctx, h), "insert host")
	if !strings.HasPrefix(h.ID, gpurent.PrefixHost+"-") {
		t.Fatalf("host id %q not generated", h.ID)
	}
	got, err := s.HostByID(ctx, h.ID)
	must(t, err, "host by id")
	same(t, "host round trip", got, h)

	// Re-registration: same name, new ID offered, new resources.
	again := &gpurent.Host{ID: "host-other", Name: "gpu-node-01", ZoneID: "cd-b", State: gpurent.HostReady,
		CPUMilli: 96000, MemoryMiB: 1 << 19, DiskGiB: 3840, Runtime: "process", AgentVersion: "1.1.0",
		AgentTokenHash: "agent-hash-2", Generation: 1, RegisteredAt: at(9)}
	must(t, s.UpsertHost(ctx, again), "upsert host again")
	want := *h
	want.ZoneID, want.CPUMilli, want.MemoryMiB, want.DiskGiB = "cd-b", 96000, 1<<19, 3840
	want.Runtime, want.AgentVersion, want.AgentTokenHash = "process", "1.1.0", "agent-hash-2"
	same(t, "upsert updates the named host, keeping id/state/generation/times", *again, want)
	got, err = s.HostByID(ctx, h.ID)
	must(t, err, "host by id after upsert")
	same(t, "stored host after upsert", *got, want)

	got, err = s.HostByAgentTokenHash(ctx, "agent-hash-2")
	must(t, err, "host by agent token hash")
	same(t, "host by token hash", *got, want)
	_, err = s.HostByAgentTokenHash(ctx, "agent-hash-1")
	wantCode(t, err, gpurent.CodeNotFound, "old agent token")
	_, err = s.HostByAgentTokenHash(ctx, "")
	wantCode(t, err, gpurent.CodeNotFound, "empty agent token")

	// Another host may not take an existing host's id.
	err = s.UpsertHost(ctx, &gpurent.Host{ID: h.ID, Name: "gpu-node-02", ZoneID: "cd-a", Runtime: "docker"})
	wantCode(t, err, gpurent.CodeConflict, "new host with a taken id")
	wantCode(t, s.UpsertHost(ctx, &gpurent.Host{}), gpurent.CodeInvalid, "host without name")

	must(t, s.SetHostState(ctx, h.ID, gpurent.HostDraining), "set state")
	later := at(20)
	must(t, s.TouchHost(ctx, h.ID, later), "touch")
	g1, err := s.BumpHostGeneration(ctx, h.ID)
	must(t, err, "bump")
	g2, err := s.BumpHostGeneration(ctx, h.ID)
	must(t, err, "bump again")
	if g1 != 8 || g2 != 9 {
		t.Fatalf("generations %d, %d; want 8, 9", g1, g2)
	}
	got, err = s.HostByID(ctx, h.ID)
	must(t, err, "host by id after updates")
	if got.State != gpurent.HostDraining || got.Generation != 9 || got.LastSeenAt == nil ||
		!got.LastSeenAt.Equal(later.Truncate(time.Microsecond)) {
		t.Fatalf("after updates: state %q generation %d last seen %v", got.State, got.Generation, got.LastSeenAt)
	}

	wantCode(t, s.SetHostState(ctx, "host-missing", gpurent.HostReady), gpurent.CodeNotFound, "set state of missing host")
	wantCode(t, s.TouchHost(ctx, "host-missing", later), gpurent.CodeNotFound, "touch missing host")
	_, err = s.BumpHostGeneration(ctx, "host-missing")
	wantCode(t, err, gpurent.CodeNotFound, "bump missing host")
	_, err = s.HostByID(ctx, "host-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing host")

	// A fresh host with no state is ready.
	h3 := &gpurent.Host{Name: "gpu-node-03", ZoneID: "cd-a", Runtime: "docker"}
	must(t, s.UpsertHost(ctx, h3), "insert host without state")
	if h3.State != gpurent.HostReady || h3.RegisteredAt.IsZero() {
		t.Fatalf("new host: state %q registered %v; want ready and a registration time", h3.State, h3.RegisteredAt)
	}
}

func testSyncHostGPUs(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "n1", "h100-80g-sxm", 0)
	gpus := []gpurent.GPU{
		{ID: "GPU-bbbb", Index: 1, TypeID: "h100-80g-sxm", MemoryMiB: 81559, Health: gpurent.GPUHealthy, TopoGroup: "nvl0", NUMANode: 0},
		{ID: "GPU-aaaa", Index: 0, TypeID: "h100-80g-sxm", MemoryMiB: 81559, Health: gpurent.GPUDegraded, TopoGroup: "nvl0", NUMANode: 0},
		{ID: "GPU-cccc", Index: 2, TypeID: "h100-80g-sxm", MemoryMiB: 81559, Health: gpurent.GPUHealthy, TopoGroup: "nvl1", NUMANode: 1},
	}
	must(t, s.SyncHostGPUs(ctx, h.ID, gpus), "sync")
	got, err := s.HostByID(ctx, h.ID)
	must(t, err, "host")
	want := []gpurent.GPU{gpus[1], gpus[0], gpus[2]}
	for i := range want {
		want[i].HostID = h.ID
	}
	same(t, "GPUs by index", got.GPUs, want)

	// GPU-cccc disappears, GPU-aaaa recovers.
	gpus2 := []gpurent.GPU{gpus[0], gpus[1]}
	gpus2[1].Health = gpurent.GPUHealthy
	must(t, s.SyncHostGPUs(ctx, h.ID, gpus2), "sync without GPU-cccc")
	got, err = s.HostByID(ctx, h.ID)
	must(t, err, "host")
	want[0].Health = gpurent.GPUHealthy
	want[2].Health = gpurent.GPUMissing
	same(t, "missing GPU kept and marked", got.GPUs, want)

	// Reporting nothing marks everything missing; nothing is deleted.
	must(t, s.SyncHostGPUs(ctx, h.ID, nil), "sync empty")
	got, err = s.HostByID(ctx, h.ID)
	must(t, err, "host")
	if len(got.GPUs) != 3 {
		t.Fatalf("%d GPUs after an empty sync, want 3 kept", len(got.GPUs))
	}
	for _, g := range got.GPUs {
		if g.Health != gpurent.GPUMissing {
			t.Fatalf("GPU %s health %q after an empty sync, want missing", g.ID, g.Health)
		}
	}
	// Reported again, it is back.
	must(t, s.SyncHostGPUs(ctx, h.ID, gpus[2:]), "sync GPU-cccc back")
	got, err = s.HostByID(ctx, h.ID)
	must(t, err, "host")
	if got.GPUs[2].Health != gpurent.GPUHealthy || got.GPUs[0].Health != gpurent.GPUMissing {
		t.Fatalf("after re-report: %+v", got.GPUs)
	}

	wantCode(t, s.SyncHostGPUs(ctx, "host-missing", gpus), gpurent.CodeNotFound, "sync missing host")
	wantCode(t, s.SyncHostGPUs(ctx, h.ID, []gpurent.GPU{gpus[0], gpus[0]}), gpurent.CodeInvalid, "GPU listed twice")
	wantCode(t, s.SyncHostGPUs(ctx, h.ID, []gpurent.GPU{{Index: 0}}), gpurent.CodeInvalid, "GPU without id")
}

func testListHostsHolders(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "lh@example.com")
	hb := SeedHost(t, s, "node-b", "h100-80g-sxm", 4)
	ha := SeedHost(t, s, "node-a", "rtx4090-24g", 2)
	in := SeedInstance(t, s, acc.ID, "train")
	al := &gpurent.Allocation{InstanceID: in.ID, HostID: hb.ID, GPUIDs: []string{hb.GPUs[3].ID, hb.GPUs[1].ID},
		StartReason: "start"}
	must(t, s.CreateAllocation(ctx, al), "allocate")

	hosts, err := s.ListHosts(ctx)
	must(t, err, "list hosts")
	if len(hosts) != 2 || hosts[0].ID != ha.ID || hosts[1].ID != hb.ID {
		t.Fatalf("hosts not ordered by name: %+v", hosts)
	}
	wantA := ha.GPUs
	same(t, "node-a GPUs, all free", hosts[0].GPUs, wantA)
	wantB := slices.Clone(hb.GPUs)
	for _, i := range []int{1, 3} {
		wantB[i].AllocationID, wantB[i].InstanceID = al.ID, in.ID
	}
	same(t, "node-b GPUs with holders", hosts[1].GPUs, wantB)
	one, err := s.HostByID(ctx, hb.ID)
	must(t, err, "host by id")
	same(t, "HostByID holders", one.GPUs, wantB)

	must(t, s.EndAllocation(ctx, al.ID, at(50), "stop"), "end")
	hosts, err = s.ListHosts(ctx)
	must(t, err, "list hosts after end")
	same(t, "node-b GPUs free after end", hosts[1].GPUs, hb.GPUs)
}

func newInstance(accountID string) *gpurent.Instance {
	return &gpurent.Instance{AccountID: accountID, Name: "llm-finetune", Image: "pytorch/pytorch:2.5",
		TypeID: "h100-80g-sxm", GPUCount: 2, ZoneID: "cd-a", HostID: "", State: gpurent.StatePending,
		StateReason: "waiting", Plan: gpurent.PlanWeekly, CPUMilli: 32000, MemoryMiB: 393216, VolumeID: "vol-x",
		IdempotencyKey: "key-1", RequestHash: "rh-1", CreatedAt: at(1), UpdatedAt: at(2)}
}

func testInstances(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "i@example.com")
	other := SeedAccount(t, s, "o@example.com")
	in := newInstance(acc.ID)
	must(t, s.CreateInstance(ctx, in), "create instance")
	if !strings.HasPrefix(in.ID, gpurent.PrefixInstance+"-") || in.Version != 1 {
		t.Fatalf("instance id %q version %d; want generated id, version 1", in.ID, in.Version)
	}
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "instance by id")
	same(t, "instance round trip", got, in)
	got, err = s.InstanceByIdempotencyKey(ctx, acc.ID, "key-1")
	must(t, err, "instance by key")
	same(t, "instance by idempotency key", got, in)

	dup := newInstance(acc.ID)
	wantCode(t, s.CreateInstance(ctx, dup), gpurent.CodeConflict, "same idempotency key")
	must(t, s.CreateInstance(ctx, newInstance(other.ID)), "same key, other account")
	for i := range 2 {
		n := newInstance(acc.ID)
		n.IdempotencyKey = ""
		must(t, s.CreateInstance(ctx, n), fmt.Sprintf("instance without key #%d", i))
	}
	n := newInstance(acc.ID)
	n.ID, n.IdempotencyKey = in.ID, "key-2"
	wantCode(t, s.CreateInstance(ctx, n), gpurent.CodeConflict, "same instance id")
	n = newInstance("acc-missing")
	n.IdempotencyKey = ""
	wantCode(t, s.CreateInstance(ctx, n), gpurent.CodeInvalid, "instance of a missing account")

	_, err = s.InstanceByID(ctx, "i-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing instance")
	_, err = s.InstanceByIdempotencyKey(ctx, acc.ID, "key-x")
	wantCode(t, err, gpurent.CodeNotFound, "missing key")
	_, err = s.InstanceByIdempotencyKey(ctx, acc.ID, "")
	wantCode(t, err, gpurent.CodeNotFound, "empty key")
}

func testUpdateInstance(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "u@example.com")
	in := newInstance(acc.ID)
	must(t, s.CreateInstance(ctx, in), "create")

	stale := *in
	upd := *in
	upd.Name, upd.HostID, upd.State, upd.StateReason, upd.VolumeID = "renamed", "host-1", gpurent.StateRunning, "", "vol-y"
	upd.UpdatedAt = at(10)
	// Fields UpdateInstance does not write.
	upd.Image, upd.Plan = "changed", gpurent.PlanMonthly
	must(t, s.UpdateInstance(ctx, &upd), "update")
	if upd.Version != 2 {
		t.Fatalf("version after update %d, want 2", upd.Version)
	}
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "read back")
	want := *in
	want.Name, want.HostID, want.State, want.StateReason, want.VolumeID = "renamed", "host-1", gpurent.StateRunning, "", "vol-y"
	want.UpdatedAt, want.Version = at(10).UTC().Truncate(time.Microsecond), 2
	same(t, "updated instance", *got, want)

	stale.State = gpurent.StateFailed
	wantCode(t, s.UpdateInstance(ctx, &stale), gpurent.CodeConflict, "stale version")
	if stale.Version != 1 {
		t.Fatalf("a refused update changed the caller's version to %d", stale.Version)
	}
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "read back")
	if got.State != gpurent.StateRunning || got.Version != 2 {
		t.Fatalf("a stale update wrote: %+v", got)
	}
	missing := *in
	missing.ID = "i-missing"
	wantCode(t, s.UpdateInstance(ctx, &missing), gpurent.CodeNotFound, "update missing instance")
}

func testListInstances(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a1 := SeedAccount(t, s, "l1@example.com")
	a2 := SeedAccount(t, s, "l2@example.com")
	mk := func(acc, host string, state gpurent.InstanceState, created time.Time, id string) gpurent.Instance {
		in := &gpurent.Instance{ID: id, AccountID: acc, HostID: host, State: state, Plan: gpurent.PlanHourly,
			CreatedAt: created, UpdatedAt: created}
		must(t, s.CreateInstance(ctx, in), "create "+id)
		return *in
	}
	// Same creation time for i-b and i-a: ordered by id.
	ib := mk(a1.ID, "h1", gpurent.StateRunning, at(5), "i-b")
	ia := mk(a1.ID, "h2", gpurent.StateStopped, at(5), "i-a")
	ic := mk(a2.ID, "h1", gpurent.StateDeleted, at(1), "i-c")
	id := mk(a1.ID, "", gpurent.StateDeleting, at(9), "i-d")
	ie := mk(a2.ID, "h1", gpurent.StatePending, at(3), "i-e")

	cases := []struct {
		name string
		f    gpurent.InstanceFilter
		want []gpurent.Instance
	}{
		{"all", gpurent.InstanceFilter{}, []gpurent.Instance{ic, ie, ia, ib, id}},
		{"account", gpurent.InstanceFilter{AccountID: a1.ID}, []gpurent.Instance{ia, ib, id}},
		{"host", gpurent.InstanceFilter{HostID: "h1"}, []gpurent.Instance{ic, ie, ib}},
		{"states", gpurent.InstanceFilter{States: []gpurent.InstanceState{gpurent.StateRunning, gpurent.StatePending}}, []gpurent.Instance{ie, ib}},
		{"active", gpurent.InstanceFilter{ActiveOnly: true}, []gpurent.Instance{ie, ia, ib, id}},
		{"account+host+active", gpurent.InstanceFilter{AccountID: a2.ID, HostID: "h1", ActiveOnly: true}, []gpurent.Instance{ie}},
		{"none", gpurent.InstanceFilter{AccountID: "acc-nobody"}, nil},
	}
	for _, c := range cases {
		got, err := s.ListInstances(ctx, c.f)
		must(t, err, "list "+c.name)
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		same(t, "list "+c.name, got, c.want)
	}
}

func testInstanceAllocationFields(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "f@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 8)
	in := SeedInstance(t, s, acc.ID, "a")
	idle := SeedInstance(t, s, acc.ID, "b")
	al := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, StartReason: "start",
		GPUIDs: []string{h.GPUs[6].ID, h.GPUs[2].ID, h.GPUs[4].ID}}
	must(t, s.CreateAllocation(ctx, al), "allocate")
	wantGPUs := []string{h.GPUs[2].ID, h.GPUs[4].ID, h.GPUs[6].ID}
	same(t, "allocation GPUs reordered by index", al.GPUIDs, wantGPUs)

	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "instance")
	if got.AllocationID != al.ID || !slices.Equal(got.GPUIDs, wantGPUs) {
		t.Fatalf("instance alloc fields %q %v; want %q %v", got.AllocationID, got.GPUIDs, al.ID, wantGPUs)
	}
	list, err := s.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
	must(t, err, "list")
	if len(list) != 2 {
		t.Fatalf("listed %d instances, want 2", len(list))
	}
	for _, li := range list {
		switch li.ID {
		case in.ID:
			if li.AllocationID != al.ID || !slices.Equal(li.GPUIDs, wantGPUs) {
				t.Fatalf("listed alloc fields %q %v; want %q %v", li.AllocationID, li.GPUIDs, al.ID, wantGPUs)
			}
		case idle.ID:
			if li.AllocationID != "" || li.GPUIDs != nil {
				t.Fatalf("idle instance has alloc fields %q %v", li.AllocationID, li.GPUIDs)
			}
		}
	}
	_, err = s.InstanceByIdempotencyKey(ctx, acc.ID, "none")
	wantCode(t, err, gpurent.CodeNotFound, "no key")

	must(t, s.EndAllocation(ctx, al.ID, at(30), "stop"), "end")
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "instance after end")
	if got.AllocationID != "" || got.GPUIDs != nil {
		t.Fatalf("ended allocation still shown: %q %v", got.AllocationID, got.GPUIDs)
	}
}

func testAllocations(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "al@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 4)
	h2 := SeedHost(t, s, "node2", "h100-80g-sxm", 2)
	in := SeedInstance(t, s, acc.ID, "a")

	_, err := s.OpenAllocation(ctx, in.ID)
	wantCode(t, err, gpurent.CodeNotFound, "no open allocation yet")

	a1 := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: []string{h.GPUs[1].ID, h.GPUs[0].ID},
		StartedAt: at(1), StartReason: "start"}
	must(t, s.CreateAllocation(ctx, a1), "allocate")
	if !strings.HasPrefix(a1.ID, gpurent.PrefixAllocation+"-") {
		t.Fatalf("allocation id %q not generated", a1.ID)
	}
	got, err := s.AllocationByID(ctx, a1.ID)
	must(t, err, "allocation by id")
	same(t, "allocation round trip", got, a1)
	got, err = s.OpenAllocation(ctx, in.ID)
	must(t, err, "open allocation")
	same(t, "open allocation", got, a1)

	// Upgrade: the old one ends and the new one begins at the same instant.
	must(t, s.EndAllocation(ctx, a1.ID, at(10), "upgrade"), "end for upgrade")
	a2 := &gpurent.Allocation{InstanceID: in.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1, 2, 3),
		StartedAt: at(10), StartReason: "upgrade"}
	must(t, s.CreateAllocation(ctx, a2), "allocate upgrade")
	ended := at(10).UTC().Truncate(time.Microsecond)
	a1.EndedAt, a1.EndReason = &ended, "upgrade"
	list, err := s.ListAllocations(ctx, in.ID)
	must(t, err, "list allocations")
	same(t, "allocations oldest first", list, []gpurent.Allocation{*a1, *a2})
	got, err = s.OpenAllocation(ctx, in.ID)
	must(t, err, "open allocation after upgrade")
	same(t, "open allocation after upgrade", got, a2)

	// Invalid claims write nothing.
	other := SeedInstance(t, s, acc.ID, "b")
	cases := []struct {
		name string
		a    gpurent.Allocation
		code gpurent.Code
	}{
		{"held GPU", gpurent.Allocation{InstanceID: other.ID, HostID: h.ID, GPUIDs: ids(h, 2)}, gpurent.CodeConflict},
		{"GPU of another host", gpurent.Allocation{InstanceID: other.ID, HostID: h.ID, GPUIDs: ids(h2, 0)}, gpurent.CodeInvalid},
		{"unknown GPU", gpurent.Allocation{InstanceID: other.ID, HostID: h2.ID, GPUIDs: []string{"GPU-nope"}}, gpurent.CodeInvalid},
		{"GPU twice", gpurent.Allocation{InstanceID: other.ID, HostID: h2.ID, GPUIDs: ids(h2, 0, 0)}, gpurent.CodeInvalid},
		{"unknown instance", gpurent.Allocation{InstanceID: "i-nope", HostID: h2.ID, GPUIDs: ids(h2, 0)}, gpurent.CodeInvalid},
		{"ended", gpurent.Allocation{InstanceID: other.ID, HostID: h2.ID, GPUIDs: ids(h2, 0), EndedAt: &ended}, gpurent.CodeInvalid},
		{"same id", gpurent.Allocation{ID: a1.ID, InstanceID: other.ID, HostID: h2.ID, GPUIDs: ids(h2, 0)}, gpurent.CodeConflict},
	}
	for _, c := range cases {
		a := c.a
		wantCode(t, s.CreateAllocation(ctx, &a), c.code, c.name)
	}
	list, err = s.ListAllocations(ctx, other.ID)
	must(t, err, "list allocations of other")
	if len(list) != 0 {
		t.Fatalf("refused claims left allocations: %+v", list)
	}
	// No-GPU mode: an allocation of no GPUs holds only its host.
	none := gpurent.Allocation{InstanceID: other.ID, HostID: h2.ID, StartReason: "start"}
	must(t, s.CreateAllocation(ctx, &none), "allocation of no GPUs")
	open, err := s.OpenAllocation(ctx, other.ID)
	must(t, err, "open allocation of no GPUs")
	if open.ID != none.ID || open.HostID != h2.ID || len(open.GPUIDs) != 0 {
		t.Fatalf("allocation of no GPUs read back as %+v", open)
	}
	must(t, s.EndAllocation(ctx, none.ID, time.Now(), "stop"), "end the allocation of no GPUs")
	_, err = s.AllocationByID(ctx, "alloc-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing allocation")
	list, err = s.ListAllocations(ctx, "i-missing")
	must(t, err, "list allocations of a missing instance")
	if len(list) != 0 {
		t.Fatalf("allocations of a missing instance: %+v", list)
	}
}

func testAllocationConflictWritesNothing(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "cw@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 4)
	a := SeedInstance(t, s, acc.ID, "a")
	b := SeedInstance(t, s, acc.ID, "b")
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 3)}), "hold GPU 3")
	// b asks for 0..3: GPUs 0-2 are free, 3 is held (and sorts last).
	err := s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1, 2, 3)})
	wantCode(t, err, gpurent.CodeConflict, "claim over a held GPU")
	if msg := gpurent.ErrorMessage(err); !strings.Contains(msg, h.GPUs[3].ID) || !strings.Contains(msg, "already allocated") {
		t.Fatalf("conflict message %q does not name the held GPU", msg)
	}
	list, err := s.ListAllocations(ctx, b.ID)
	must(t, err, "list")
	if len(list) != 0 {
		t.Fatalf("refused claim left allocations: %+v", list)
	}
	// GPUs 0-2 were not left held.
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1, 2)}),
		"claim the GPUs the refused claim touched")
}

func testAllocationConflictInTx(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "ct@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 2)
	a := SeedInstance(t, s, acc.ID, "a")
	b := SeedInstance(t, s, acc.ID, "b")
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 1)}), "hold GPU 1")
	// The loser of a claim re-plans inside the same transaction: the
	// refused claim leaves nothing and the transaction goes on.
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.AddEvent(ctx, &gpurent.Event{InstanceID: b.ID, Kind: "placing"}); err != nil {
			return err
		}
		err := q.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1)})
		if !gpurent.IsCode(err, gpurent.CodeConflict) {
			return fmt.Errorf("first claim: got %v, want a conflict", err)
		}
		if err := q.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 0)}); err != nil {
			return fmt.Errorf("re-planned claim: %w", err)
		}
		return q.AddEvent(ctx, &gpurent.Event{InstanceID: b.ID, Kind: "placed"})
	})
	must(t, err, "transaction with a refused claim")
	list, err := s.ListAllocations(ctx, b.ID)
	must(t, err, "list")
	if len(list) != 1 || !slices.Equal(list[0].GPUIDs, ids(h, 0)) {
		t.Fatalf("allocations after re-plan: %+v", list)
	}
	ev, err := s.ListEvents(ctx, b.ID)
	must(t, err, "events")
	if len(ev) != 2 {
		t.Fatalf("events after re-plan: %+v", ev)
	}
}

func testEndAllocation(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "e@example.com")
	h := SeedHost(t, s, "node", "h100-80g-sxm", 2)
	a := SeedInstance(t, s, acc.ID, "a")
	b := SeedInstance(t, s, acc.ID, "b")
	al := &gpurent.Allocation{InstanceID: a.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1), StartedAt: at(1), StartReason: "start"}
	must(t, s.CreateAllocation(ctx, al), "allocate")
	must(t, s.EndAllocation(ctx, al.ID, at(20), "stop"), "end")
	must(t, s.EndAllocation(ctx, al.ID, at(40), "delete"), "end again")
	got, err := s.AllocationByID(ctx, al.ID)
	must(t, err, "read")
	if got.EndedAt == nil || !got.EndedAt.Equal(at(20).Truncate(time.Microsecond)) || got.EndReason != "stop" {
		t.Fatalf("second end changed the allocation: ended %v reason %q", got.EndedAt, got.EndReason)
	}
	_, err = s.OpenAllocation(ctx, a.ID)
	wantCode(t, err, gpurent.CodeNotFound, "no open allocation after end")
	wantCode(t, s.EndAllocation(ctx, "alloc-missing", at(1), "stop"), gpurent.CodeNotFound, "end missing allocation")
	// Released GPUs can be claimed again.
	must(t, s.CreateAllocation(ctx, &gpurent.Allocation{InstanceID: b.ID, HostID: h.ID, GPUIDs: ids(h, 0, 1)}), "claim released GPUs")
}

func testVolumes(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "v@example.com")
	v := &gpurent.Volume{InstanceID: "i-1", AccountID: acc.ID, HostID: "host-1", SizeGiB: 200, Name: "gpurent-vol-1", CreatedAt: at(1)}
	must(t, s.CreateVolume(ctx, v), "create volume")
	if !strings.HasPrefix(v.ID, gpurent.PrefixVolume+"-") {
		t.Fatalf("volume id %q not generated", v.ID)
	}
	got, err := s.VolumeByID(ctx, v.ID)
	must(t, err, "volume")
	same(t, "volume round trip", got, v)
	wantCode(t, s.CreateVolume(ctx, &gpurent.Volume{ID: v.ID, AccountID: acc.ID}), gpurent.CodeConflict, "same volume id")

	must(t, s.MarkVolumeDeleted(ctx, v.ID, at(9)), "delete")
	must(t, s.MarkVolumeDeleted(ctx, v.ID, at(19)), "delete again")
	got, err = s.VolumeByID(ctx, v.ID)
	must(t, err, "volume after delete")
	if got.DeletedAt == nil || !got.DeletedAt.Equal(at(9).Truncate(time.Microsecond)) {
		t.Fatalf("deleted_at %v, want the first deletion %v", got.DeletedAt, at(9))
	}
	wantCode(t, s.MarkVolumeDeleted(ctx, "vol-missing", at(1)), gpurent.CodeNotFound, "delete missing volume")
	_, err = s.VolumeByID(ctx, "vol-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing volume")
}

func testEvents(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "ev@example.com")
	in := SeedInstance(t, s, acc.ID, "a")
	other := SeedInstance(t, s, acc.ID, "b")
	e3 := &gpurent.Event{InstanceID: in.ID, At: at(3), Kind: "running", Message: "started on node-1"}
	e1 := &gpurent.Event{InstanceID: in.ID, At: at(1), Kind: "created", Message: "created"}
	e2a := &gpurent.Event{InstanceID: in.ID, At: at(2), Kind: "placed", Message: "placed on node-1"}
	e2b := &gpurent.Event{InstanceID: in.ID, At: at(2), Kind: "provisioning", Message: "pulling image"}
	for _, e := range []*gpurent.Event{e3, e1, e2a, e2b} {
		must(t, s.AddEvent(ctx, e), "add event "+e.Kind)
	}
	must(t, s.AddEvent(ctx, &gpurent.Event{InstanceID: other.ID, Kind: "created"}), "add event to other")
	list, err := s.ListEvents(ctx, in.ID)
	must(t, err, "list events")
	same(t, "events oldest first, ties in insertion order", list, []gpurent.Event{*e1, *e2a, *e2b, *e3})
	wantCode(t, s.AddEvent(ctx, &gpurent.Event{InstanceID: "i-missing", Kind: "x"}), gpurent.CodeInvalid, "event of a missing instance")
	list, err = s.ListEvents(ctx, "i-missing")
	must(t, err, "list events of a missing instance")
	if len(list) != 0 {
		t.Fatalf("events of a missing instance: %+v", list)
	}
}

func testIdempotency(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "id@example.com")
	other := SeedAccount(t, s, "id2@example.com")
	body := []byte("{\"id\":\"i-1\"}\x00\xff binary")
	r := &gpurent.IdempotencyRecord{AccountID: acc.ID, Key: "k1", Method: "POST", Path: "/v1/instances",
		RequestHash: "rh", Status: 201, Body: body, CreatedAt: at(1)}
	must(t, s.SaveIdempotency(ctx, r), "save")
	got, err := s.IdempotencyByKey(ctx, acc.ID, "k1")
	must(t, err, "read")
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("body %q, want %q", got.Body, body)
	}
	got.Body = r.Body
	same(t, "idempotency record round trip", got, r)

	dup := *r
	dup.Status = 500
	wantCode(t, s.SaveIdempotency(ctx, &dup), gpurent.CodeConflict, "same key")
	must(t, s.SaveIdempotency(ctx, &gpurent.IdempotencyRecord{AccountID: other.ID, Key: "k1", Method: "POST", Status: 200}),
		"same key, other account, empty body")
	got, err = s.IdempotencyByKey(ctx, other.ID, "k1")
	must(t, err, "read empty body")
	if len(got.Body) != 0 {
		t.Fatalf("empty body came back as %q", got.Body)
	}
	_, err = s.IdempotencyByKey(ctx, acc.ID, "k2")
	wantCode(t, err, gpurent.CodeNotFound, "missing key")
	got, err = s.IdempotencyByKey(ctx, acc.ID, "k1")
	must(t, err, "read after refused overwrite")
	if got.Status != 201 {
		t.Fatalf("refused overwrite changed the status to %d", got.Status)
	}
}

var errTestRollback = errors.New("roll back, please")

func testInTx(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	// Commit: writes are visible, and visible inside before commit.
	var id string
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		a := SeedAccount(t, q, "c@example.com")
		id = a.ID
		got, err := q.AccountByID(ctx, a.ID)
		if err != nil {
			return fmt.Errorf("own write not visible inside: %w", err)
		}
		if got.Email != "c@example.com" {
			return fmt.Errorf("read inside: %+v", got)
		}
		in := SeedInstance(t, q, a.ID, "x")
		in.State = gpurent.StateRunning
		return q.UpdateInstance(ctx, in)
	})
	must(t, err, "committed transaction")
	if _, err := s.AccountByID(ctx, id); err != nil {
		t.Fatalf("committed account not visible: %v", err)
	}

	// Error: everything rolls back and the error comes back as is.
	err = s.InTx(ctx, func(q gpurent.Queries) error {
		SeedAccount(t, q, "rollback@example.com")
		return errTestRollback
	})
	if !errors.Is(err, errTestRollback) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	_, err = s.AccountByEmail(ctx, "rollback@example.com")
	wantCode(t, err, gpurent.CodeNotFound, "account written by a rolled-back transaction")

	// A store error inside rolls back the earlier writes too.
	err = s.InTx(ctx, func(q gpurent.Queries) error {
		SeedAccount(t, q, "first@example.com")
		return q.CreateAccount(ctx, &gpurent.Account{Email: "C@example.com", Role: gpurent.RoleCustomer})
	})
	wantCode(t, err, gpurent.CodeConflict, "conflict inside a transaction")
	_, err = s.AccountByEmail(ctx, "first@example.com")
	wantCode(t, err, gpurent.CodeNotFound, "write before a failing write")

	// Panic: rolls back, and the panic goes on.
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the panic to go on after rollback", p)
			}
		}()
		_ = s.InTx(ctx, func(q gpurent.Queries) error {
			SeedAccount(t, q, "panic@example.com")
			panic("boom")
		})
		t.Fatalf("InTx returned after a panic")
	}()
	_, err = s.AccountByEmail(ctx, "panic@example.com")
	wantCode(t, err, gpurent.CodeNotFound, "account written before a panic")

	// The store still works after all that (the writer is free again).
	SeedAccount(t, s, "after@example.com")
	must(t, s.InTx(ctx, func(q gpurent.Queries) error { return nil }), "empty transaction")
}

func testTimesUTC(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	local := time.Date(2025, 6, 30, 23, 59, 59, 999999999, time.FixedZone("UTC-7", -7*3600))
	a := &gpurent.Account{Email: "tz@example.com", Role: gpurent.RoleCustomer, CreatedAt: local}
	must(t, s.CreateAccount(ctx, a), "create")
	got, err := s.AccountByID(ctx, a.ID)
	must(t, err, "read")
	if got.CreatedAt.Location() != time.UTC {
		t.Fatalf("time read back in %v, want UTC", got.CreatedAt.Location())
	}
	want := local.UTC().Truncate(time.Microsecond)
	if !got.CreatedAt.Equal(want) || got.CreatedAt.Nanosecond() != 999999000 {
		t.Fatalf("time %v, want %v (microsecond precision)", got.CreatedAt, want)
	}
	// Ordering follows instants, not the text of the zone they came in.
	b := &gpurent.Account{Email: "tz2@example.com", Role: gpurent.RoleCustomer,
		CreatedAt: time.Date(2025, 7, 1, 1, 0, 0, 0, time.FixedZone("CST", 8*3600))} // earlier instant
	must(t, s.CreateAccount(ctx, b), "create second")
	list, err := s.ListAccounts(ctx)
	must(t, err, "list")
	if len(list) != 2 || list[0].ID != b.ID {
		t.Fatalf("accounts not in time order: %+v", list)
	}
}

// ids returns the ids of h's GPUs at the given indexes.
func ids(h *gpurent.Host, idx ...int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = h.GPUs[x].ID
	}
	return out
}
