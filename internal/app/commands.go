package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent"
	agentruntime "github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/process"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/gpu/nvml"
	"github.com/gpurent/gpurent/internal/wallet"
)

func serveCommand() *cobra.Command {
	var (
		listen, dsn, dataDir, joinToken, runtimeFlag string
		demo                                         bool
		demoHostsPerType                             int
		verbose                                      bool
		payee, sshListen, sshAdvertise               string
		sshIdle                                      time.Duration
		secureCookies                                bool
		publicURL, mailURL                           string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control plane (API, agents' endpoint); --demo adds a fake GPU fleet",
		Long: `Run the control plane.

With --demo it also seeds an operator and a customer and runs in-process agents
for a fleet of fake GPU hosts in two zones, on an embedded SQLite database. With
a Docker Engine reachable, instances are real containers; otherwise they are
plain processes (the "process" runtime, for demos only: it isolates nothing).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := newLogger(cmd.ErrOrStderr(), level)
			if dsn == "" {
				dsn = filepath.Join(dataDir, "gpurent.db")
			}
			if joinToken == "" {
				var err error
				if joinToken, err = loadOrMakeJoinToken(dataDir); err != nil {
					return err
				}
			}
			if mailURL != "" && publicURL == "" {
				// Mailed links must name the address customers use, which
				// the listen address (often 0.0.0.0 or behind a proxy) is not.
				return fmt.Errorf("--smtp-url needs --public-url: the password-reset links it mails name the console's public address")
			}
			if payee == "" && demo {
				payee = DemoBankPayee
			}
			var providers []wallet.PaymentProvider
			if payee != "" {
				providers = append(providers, wallet.NewBankTransferProvider(payee))
			}
			sc := ServerConfig{DSN: dsn, Listen: listen, JoinToken: joinToken, Logger: log, PaymentProviders: providers,
				SSHListen: sshListen, SSHAdvertise: sshAdvertise, KeyDir: dataDir, SSHIdleTimeout: sshIdle,
				SecureCookies: secureCookies, PublicURL: publicURL, MailURL: mailURL,
				Certification: CertificationConfig{Interval: 30 * time.Second}}
			if demo {
				// Fake GPUs' synthetic results certify the demo's cards, a
				// few hosts at a time so that most GPUs stay free to rent.
				sc.Certification = CertificationConfig{AcceptSynthetic: true, Interval: 5 * time.Second, MaxOpenJobs: 3}
			}
			s, err := StartServer(ctx, sc)
			if err != nil {
				return err
			}
			defer s.Close()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "gpurent %s control plane on %s (database: %s)\n", Version, s.URL, s.Store.Backend())
			fmt.Fprintf(out, "  agents join with: gpurent agent --server %s --join-token %s --zone ZONE\n", s.URL, joinToken)
			if s.SSHAddr != "" {
				fmt.Fprintf(out, "  SSH gateway on %s (customers: gpurent ssh-key add; gpurent ssh INSTANCE)\n", s.SSHAddr)
			}
			if payee != "" {
				fmt.Fprintf(out, "  top-ups by bank transfer to: %s (confirm with `gpurent payment bank-transfer REFERENCE AMOUNT`)\n", payee)
			}
			if demo {
				if err := seedDemoAccounts(ctx, s); err != nil {
					return err
				}
				c, err := catalog.Default()
				if err != nil {
					return err
				}
				agentLog := newLogger(cmd.ErrOrStderr(), slog.LevelWarn)
				as, err := StartAgents(ctx, AgentsConfig{
					ServerURL: s.URL, JoinToken: joinToken, DataDir: filepath.Join(dataDir, "demo-agents"),
					Hosts: DemoFleet(c, demoHostsPerType), Catalog: c, Runtime: RuntimeChoice(runtimeFlag), Logger: agentLog,
					BenchPace: 20 * time.Millisecond,
				})
				if err != nil {
					return err
				}
				defer as.Stop()
				s.Incidents.SetInjector(as) // `gpurent fault inject` reaches the fake GPUs
				slow, err := as.SlowDemoCard(ctx, DemoSlowCardFactor)
				if err != nil {
					return err
				}
				rt := as.Runtime
				if rt == "process" {
					why := "no Docker Engine reachable"
					if runtimeFlag == string(RuntimeProcess) {
						why = "chosen with --demo-runtime process"
					}
					rt = "process — DEMO ONLY: instances are plain processes, not containers (" + why + ")"
				}
				fmt.Fprintf(out, "\nDemo fleet: %d fake GPU hosts (%d x 8 GPUs per type) in %d zones; instance runtime: %s\n",
					demoHostsPerType*len(c.GPUTypes), demoHostsPerType, len(c.Zones), rt)
				fmt.Fprintf(out, "  operator: %s / %s\n", DemoOperatorEmail, DemoOperatorPassword)
				fmt.Fprintf(out, "  customer: %s / %s (balance ¥%d)\n", DemoCustomerEmail, DemoCustomerPassword, DemoCustomerBalanceFen/100)
				fmt.Fprintf(out, "  benchmarks: every idle GPU is benchmarked (synthetic figures, marked so); card %s measures %.0f%%\n"+
					"    of its peers and is delisted after its re-run: see %s/transparency\n", slow, DemoSlowCardFactor*100, s.URL)
				fmt.Fprintf(out, "\nTry:\n  gpurent login --server %s --email %s\n  gpurent gpus\n  gpurent rent --gpu h100-80g-sxm --count 4 --wait --image %s\n  gpurent ls\n",
					s.URL, DemoCustomerEmail, demoImage(as.Runtime))
			}
			fmt.Fprintln(out, "\nPress Ctrl-C to stop. Instances keep running; a restart picks them up.")
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", envOr("GPURENT_LISTEN", "127.0.0.1:8080"), "address to serve on (env GPURENT_LISTEN)")
	f.StringVar(&dsn, "db", os.Getenv("GPURENT_DB"), "database: a SQLite file path or a postgres:// URL (env GPURENT_DB; default <data-dir>/gpurent.db)")
	f.StringVar(&dataDir, "data-dir", defaultDataDir(), "directory for the database, the join token and demo agents (env GPURENT_DATA_DIR)")
	f.StringVar(&joinToken, "join-token", os.Getenv("GPURENT_JOIN_TOKEN"), "token agents present to register (env GPURENT_JOIN_TOKEN; default: generated once, kept in <data-dir>/join-token)")
	f.StringVar(&payee, "bank-transfer-payee", os.Getenv("GPURENT_BANK_TRANSFER_PAYEE"),
		"take top-ups by bank transfer to this account (bank, name, number); operators confirm them with `gpurent payment` (env GPURENT_BANK_TRANSFER_PAYEE)")
	f.StringVar(&sshListen, "ssh-listen", envOr("GPURENT_SSH_LISTEN", "127.0.0.1:2222"),
		"where the SSH gateway to instances listens (\"\": no gateway) (env GPURENT_SSH_LISTEN)")
	f.StringVar(&sshAdvertise, "ssh-advertise", os.Getenv("GPURENT_SSH_ADVERTISE"),
		"host:port customers dial for SSH, when not the listen address (env GPURENT_SSH_ADVERTISE)")
	f.DurationVar(&sshIdle, "ssh-idle-timeout", 0, "close SSH connections idle this long (0: never; dead ones are dropped by keepalives)")
	f.BoolVar(&secureCookies, "secure-cookies", os.Getenv("GPURENT_SECURE_COOKIES") == "true",
		"mark browser-link cookies Secure: set it behind a TLS-terminating proxy (env GPURENT_SECURE_COOKIES=true)")
	f.StringVar(&publicURL, "public-url", os.Getenv("GPURENT_PUBLIC_URL"),
		"the control plane's address as customers reach it, e.g. https://gpu.example.com (env GPURENT_PUBLIC_URL; default: the listen address)")
	f.StringVar(&mailURL, "smtp-url", os.Getenv("GPURENT_SMTP_URL"),
		"mail password-reset links through this SMTP server: smtp://[user:pass@]host[:587]?from=ADDRESS[&tls=required][&ca=FILE], or smtps:// (env GPURENT_SMTP_URL, better than the flag for a password; default: links are logged for an operator)")
	f.BoolVar(&demo, "demo", false, "seed demo logins and run in-process agents with fake GPUs")
	f.IntVar(&demoHostsPerType, "demo-hosts", 8, "demo hosts per GPU type (8 GPUs each)")
	f.StringVar(&runtimeFlag, "demo-runtime", "auto", "demo instance runtime: auto, docker or process")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	return cmd
}

func demoImage(runtime string) string {
	if runtime == "docker" {
		return "ubuntu:24.04   # any image this Docker host has or can pull"
	}
	return "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime   # only recorded: the process runtime runs no image"
}

// loadOrMakeJoinToken keeps one join token per data directory.
func loadOrMakeJoinToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "join-token")
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	t := "gpj_" + gpurent.RandomSecret(24)
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", err
	}
	return t, nil
}

func agentCommand() *cobra.Command {
	var (
		server, joinToken, name, zone, stateDir, runtimeFlag, gpuFlag, fakeGPUs, benchImage string
		accessListen, accessAdvertise, probeListen                                          string
		fakeGroup                                                                           int
		verbose                                                                             bool
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the host agent: register this GPU host and run its instances",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := newLogger(cmd.ErrOrStderr(), level)
			if name == "" {
				h, err := os.Hostname()
				if err != nil {
					return err
				}
				name = h
			}
			if stateDir == "" {
				stateDir = filepath.Join(defaultDataDir(), "agent")
			}
			var provider gpu.Provider
			switch gpuFlag {
			case "nvml":
				p, err := nvml.New()
				if err != nil {
					return err
				}
				provider = p
			case "fake":
				p, err := fakeProvider(name, fakeGPUs, fakeGroup)
				if err != nil {
					return err
				}
				provider = p
			default:
				return fmt.Errorf("--gpus must be nvml or fake, got %q", gpuFlag)
			}
			defer provider.Close()
			var rt agentruntime.Runtime
			var bench agent.BenchRunner
			if fp, ok := provider.(*fake.Provider); ok {
				// Fake GPUs measure nothing: their results are synthetic
				// (and say so), from the reference figures.
				bench = agent.SyntheticRunner{Performance: fp.Performance, Pace: 100 * time.Millisecond}
			}
			switch runtimeFlag {
			case "docker":
				d, err := docker.New(ctx, docker.Config{Logger: log, CarryLayer: carryLayer})
				if err != nil {
					return err
				}
				rt = d
				if bench == nil && benchImage != "" {
					if bench, err = docker.NewBenchRunner(d, docker.BenchConfig{Image: benchImage}); err != nil {
						return err
					}
				}
			case "process":
				log.Warn("process runtime: instances are plain processes without isolation; use it for demos only")
				p, err := process.New(process.Config{Dir: filepath.Join(stateDir, "runtime"), Logger: log})
				if err != nil {
					return err
				}
				rt = p
			default:
				return fmt.Errorf("--runtime must be docker or process, got %q", runtimeFlag)
			}
			listen := accessListen
			if runtimeFlag == "process" && !cmd.Flags().Changed("access-listen") {
				listen = "" // the process runtime cannot reach into instances
			}
			ep, moves, err := startAccess(ctx, stateDir, listen, accessAdvertise, rt, log)
			if err != nil {
				return err
			}
			if probeListen != "" {
				l, err := net.Listen("tcp", probeListen)
				if err != nil {
					return fmt.Errorf("--probe-listen: %w", err)
				}
				log.Info("agent: zone latency probe listening; point the zone at it with `gpurent zones set-probe`",
					"addr", l.Addr().String(), "path", agent.ProbePath)
				go agent.ServeProbe(ctx, l, log)
			}
			a, err := agent.New(agent.Config{ServerURL: server, JoinToken: joinToken, Name: name, Zone: zone,
				StateDir: stateDir, Runtime: rt, GPUs: provider, Logger: log, Version: Version, Access: ep, Transfers: moves,
				Bench: bench})
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", envOr("GPURENT_SERVER", "http://127.0.0.1:8080"), "control plane URL (env GPURENT_SERVER)")
	f.StringVar(&joinToken, "join-token", os.Getenv("GPURENT_JOIN_TOKEN"), "join token printed by `gpurent serve` (env GPURENT_JOIN_TOKEN)")
	f.StringVar(&name, "name", "", "host name (default: the machine's hostname)")
	f.StringVar(&zone, "zone", os.Getenv("GPURENT_ZONE"), "zone id of this host (env GPURENT_ZONE)")
	f.StringVar(&stateDir, "state-dir", "", "where the agent keeps its credentials (default <data-dir>/agent)")
	f.StringVar(&runtimeFlag, "runtime", "docker", "instance runtime: docker, or process (demos only)")
	f.StringVar(&accessListen, "access-listen", envOr("GPURENT_ACCESS_LISTEN", ":2223"),
		"where the SSH access server listens for the control plane's gateway (\"\": none) (env GPURENT_ACCESS_LISTEN)")
	f.StringVar(&accessAdvertise, "access-advertise", os.Getenv("GPURENT_ACCESS_ADVERTISE"),
		"host:port the gateway dials to reach this agent (default: this machine's name and the listen port) (env GPURENT_ACCESS_ADVERTISE)")
	f.StringVar(&gpuFlag, "gpus", "nvml", "GPU discovery: nvml (needs a build with -tags nvml) or fake")
	f.StringVar(&fakeGPUs, "fake-gpus", "h100-80g-sxm:8", "with --gpus fake: TYPE:COUNT")
	f.IntVar(&fakeGroup, "fake-group-size", 8, "with --gpus fake: GPUs per NVLink domain / PCIe switch")
	f.StringVar(&benchImage, "bench-image", envOr("GPURENT_BENCH_IMAGE", "gpurent-bench:1"),
		"the benchmark image built from bench/Dockerfile, pinned by digest in production (\"\": refuse benchmark jobs) (env GPURENT_BENCH_IMAGE)")
	f.StringVar(&probeListen, "probe-listen", os.Getenv("GPURENT_PROBE_LISTEN"),
		"serve the console's zone latency probe (GET /probe) here, e.g. :8090 (\"\": none) (env GPURENT_PROBE_LISTEN)")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	return cmd
}

// fakeProvider parses TYPE:COUNT against the default catalog.
func fakeProvider(host, spec string, group int) (gpu.Provider, error) {
	typ, n, ok := strings.Cut(spec, ":")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 || count > 64 {
		return nil, fmt.Errorf("--fake-gpus must be TYPE:COUNT with COUNT 1..64, got %q", spec)
	}
	c, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	for _, t := range c.GPUTypes {
		if t.ID == typ {
			return fake.New(fake.Config{Host: host, TypeID: t.ID, Name: t.Name, Count: count,
				MemoryMiB: int64(t.MemoryGB) * 1024, GroupSize: group}), nil
		}
	}
	return nil, fmt.Errorf("--fake-gpus: unknown GPU type %q", typ)
}
