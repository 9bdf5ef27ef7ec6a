package app

import (
	"context"
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

	"github.com/gpurent/gpurent/internal/agent"
	agentruntime "github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/process"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/egress"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/gpu/nvml"
	"github.com/gpurent/gpurent/internal/imageref"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/outbound"
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
		publicURL, mailURL, imageRegistries          string
		portsDomain                                  string
		webhookAllowHTTP                             bool
		metricsListen                                string
		registryURL, registryCreds                   string
		maxImageGiB                                  int64
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
			if cmd.Flags().Changed("join-token") {
				return errSharedJoinToken
			}
			if mailURL != "" && publicURL == "" {
				// Mailed links must name the address customers use, which
				// the listen address (often 0.0.0.0 or behind a proxy) is not.
				return fmt.Errorf("--smtp-url needs --public-url: the password-reset links it mails name the console's public address")
			}
			if webhookAllowHTTP && !demo {
				return fmt.Errorf("--webhook-allow-http is for the demo only (with --demo): customers' webhooks must use https")
			}
			if payee == "" && demo {
				payee = DemoBankPayee
			}
			var providers []wallet.PaymentProvider
			if payee != "" {
				providers = append(providers, wallet.NewBankTransferProvider(payee))
			}
			sc := ServerConfig{DSN: dsn, Listen: listen, Logger: log, PaymentProviders: providers,
				SSHListen: sshListen, SSHAdvertise: sshAdvertise, KeyDir: dataDir, SSHIdleTimeout: sshIdle,
				SecureCookies: secureCookies, PublicURL: publicURL, MailURL: mailURL, PortsDomain: portsDomain,
				Certification: CertificationConfig{Interval: 30 * time.Second},
				Webhooks:      outbound.Policy{AllowHTTP: webhookAllowHTTP}, MetricsListen: metricsListen,
				ImageRegistries: imageref.ParseList(imageRegistries)}
			if registryURL != "" {
				sc.Registry.URL = registryURL
				if !cmd.Flags().Changed("image-registries") && os.Getenv("GPURENT_IMAGE_REGISTRIES") == "" {
					sc.ImageRegistries = nil // the operator's registry only
				}
			}
			if maxImageGiB < 0 || maxImageGiB > 1<<20 {
				return fmt.Errorf("--max-image-gib must be 0 (no limit) to %d, got %d", 1<<20, maxImageGiB)
			}
			sc.Registry.MaxImageGiB = maxImageGiB
			if registryCreds != "" {
				c, err := readRegistryCredentials(registryCreds)
				if err != nil {
					return err
				}
				sc.Registry.Username, sc.Registry.Password = c.Username, c.Password
			}
			if demo {
				// Fake GPUs' synthetic results certify the demo's cards, a
				// few hosts at a time so that most GPUs stay free to rent.
				sc.Certification = CertificationConfig{AcceptSynthetic: true, Interval: 5 * time.Second, MaxOpenJobs: 3}
			}
			var demoReg *demoRegistry
			if demo && registryURL == "" && runtimeFlag != string(RuntimeProcess) && dockerReachable(ctx) {
				// The demo's base images come from a real registry on
				// loopback, where Debian's docker-registry is installed.
				r, err := startDemoRegistry(filepath.Join(dataDir, "demo-registry"))
				if err != nil {
					return err
				}
				if r != nil {
					defer r.Stop()
					demoReg, sc.Registry.URL = r, "http://"+r.addr
				}
			}
			s, err := StartServer(ctx, sc)
			if err != nil {
				return err
			}
			defer s.Close()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "gpurent %s control plane on %s (database: %s)\n", Version, s.URL, s.Store.Backend())
			fmt.Fprintf(out, "  agents join with a one-time token: gpurent hosts join-token create --zone ZONE, then on the host\n"+
				"    GPURENT_JOIN_TOKEN=<token> gpurent agent --server %s --zone ZONE   (or --join-token-file FILE)\n", s.URL)
			if s.MetricsURL != "" {
				fmt.Fprintf(out, "  metrics (no authentication) on %s\n", s.MetricsURL)
			}
			if s.SSHAddr != "" {
				fmt.Fprintf(out, "  SSH gateway on %s (customers: gpurent ssh-key add; gpurent ssh INSTANCE)\n", s.SSHAddr)
			}
			if s.PortsPattern != "" {
				fmt.Fprintf(out, "  instance ports in the browser on %s/ (links: gpurent open INSTANCE PORT, or the instance page)\n", s.PortsPattern)
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
					ServerURL: s.URL, Join: s, DataDir: filepath.Join(dataDir, "demo-agents"), InitBuildDir: filepath.Join(dataDir, "bin"),
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
				imagesHow, err := seedDemoImages(ctx, s, as.Runtime == "docker", as.InitBinary, demoReg)
				if err != nil {
					return err
				}
				if err := s.Rental.PrepullChanged(ctx); err != nil {
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
				fmt.Fprintf(out, "  customer: %s / %s (balance ¥%s)\n", DemoCustomerEmail, DemoCustomerPassword, money.Short(DemoCustomerBalanceFen))
				fmt.Fprintf(out, "  benchmarks: every idle GPU is benchmarked (synthetic figures, marked so); card %s measures %.0f%%\n"+
					"    of its peers and is delisted after its re-run: see %s/transparency\n", slow, DemoSlowCardFactor*100, s.URL)
				fmt.Fprintf(out, "  base images: %s (gpurent images)\n", imagesHow)
				fmt.Fprintf(out, "\nTry:\n  gpurent login --server %s --email %s\n  gpurent gpus\n  gpurent images\n  gpurent rent --gpu h100-80g-sxm --count 4 --wait --image %s\n  gpurent ls\n",
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
	f.StringVar(&dataDir, "data-dir", defaultDataDir(), "directory for the database, keys and demo agents (env GPURENT_DATA_DIR)")
	f.StringVar(&joinToken, "join-token", "", "removed: there is no shared join token; each host joins with its own (gpurent hosts join-token create)")
	_ = f.MarkHidden("join-token")
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
	f.StringVar(&portsDomain, "ports-domain", os.Getenv("GPURENT_PORTS_DOMAIN"),
		"serve instance ports on <instance>-<port>.DOMAIN (a wildcard DNS name and certificate pointing here, sharing no cookies with the console's host: e.g. ports.example-usercontent.com for a console on cloud.example.com) (env GPURENT_PORTS_DOMAIN; default: localhost for a console on a loopback address, else no port links)")
	f.StringVar(&mailURL, "smtp-url", os.Getenv("GPURENT_SMTP_URL"),
		"mail password-reset links through this SMTP server: smtp://[user:pass@]host[:587]?from=ADDRESS[&tls=required][&ca=FILE], or smtps:// (env GPURENT_SMTP_URL, better than the flag for a password; default: links are logged for an operator)")
	f.StringVar(&metricsListen, "metrics-listen", os.Getenv("GPURENT_METRICS_LISTEN"),
		"also serve /metrics without authentication on this address, for a scraper on a network only operators reach, e.g. 127.0.0.1:9464 (env GPURENT_METRICS_LISTEN; default none: /metrics on --listen needs an operator's token)")
	f.BoolVar(&webhookAllowHTTP, "webhook-allow-http", false,
		"with --demo: accept plain http:// webhooks (never internal addresses); without it webhooks must be https://")
	f.StringVar(&imageRegistries, "image-registries", envOr("GPURENT_IMAGE_REGISTRIES", imageref.DockerHub),
		"registries customers may rent images from, comma-separated (e.g. docker.io,registry.example.com; * for any; env GPURENT_IMAGE_REGISTRIES); localhost and loopback or link-local addresses never")
	f.StringVar(&registryURL, "registry", os.Getenv("GPURENT_REGISTRY"),
		"the operator's own image registry, https://host[:port] (or http:// for one on loopback or a network the Docker daemons trust): agents pull from it, and without --image-registries customers rent from it only (env GPURENT_REGISTRY)")
	f.StringVar(&registryCreds, "registry-credentials", os.Getenv("GPURENT_REGISTRY_CREDENTIALS"),
		"file (mode 600) with the registry's PULL credential handed to agents, user:password or JSON with username and password: an account of a read-only endpoint, never one that can push (docs/security.md) (env GPURENT_REGISTRY_CREDENTIALS)")
	f.Int64Var(&maxImageGiB, "max-image-gib", 0,
		"refuse base images of the catalog that state a size over this many GiB (0: no limit; agents also cut off pulls over their own --max-image-gib)")
	f.BoolVar(&demo, "demo", false, "seed demo logins and run in-process agents with fake GPUs")
	f.IntVar(&demoHostsPerType, "demo-hosts", 8, "demo hosts per GPU type (8 GPUs each)")
	f.StringVar(&runtimeFlag, "demo-runtime", "auto", "demo instance runtime: auto, docker or process")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	return cmd
}

// demoImage is the image of the demo banner's rent: the demo catalog's.
func demoImage(runtime string) string {
	if runtime == "docker" {
		return DemoImageName + "   # from the catalog: gpurent images"
	}
	return DemoImageName + "   # only recorded: the process runtime runs no image"
}

// dockerReachable reports whether a Docker Engine answers (the demo's
// auto runtime asks the same).
func dockerReachable(ctx context.Context) bool {
	probe, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return docker.Reachable(probe, "") == nil
}

// errSharedJoinToken answers `serve --join-token`: the one token every
// agent shared is gone.
var errSharedJoinToken = errors.New("serve no longer takes --join-token: there is no shared join token. " +
	"Each host joins with its own one-time token: `gpurent hosts join-token create --zone ZONE [--name HOST]`")

// errJoinTokenFlag answers `agent --join-token VALUE`: a secret on the
// command line is seen by every user of the machine (ps, /proc).
var errJoinTokenFlag = errors.New("--join-token no longer takes the token on the command line (every user of the machine can read it there): " +
	"put it in a file readable only by the agent's user and pass --join-token-file FILE, or set GPURENT_JOIN_TOKEN")

// joinTokenSource is where the agent reads its join token: the file
// (read again at each registration, so that a token an operator's reset
// issued can be dropped in), else the environment's value.
func joinTokenSource(file, env string) (string, func(context.Context) (string, error)) {
	if file == "" {
		return env, nil
	}
	return "", func(context.Context) (string, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--join-token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--join-token-file %s is empty", file)
		}
		return t, nil
	}
}

func agentCommand() *cobra.Command {
	var (
		server, joinToken, joinTokenFile, name, zone, stateDir, runtimeFlag, gpuFlag, fakeGPUs, benchImage string
		accessListen, accessAdvertise, probeListen, imageRegistries                                        string
		initBinFlag                                                                                        string
		instanceNetwork, egressAllow, volumeQuotaDir, layerQuota                                           string
		layerGiB, maxImageGiB                                                                              int64
		fakeGroup                                                                                          int
		verbose                                                                                            bool
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
			if cmd.Flags().Changed("join-token") {
				return errJoinTokenFlag
			}
			join, joinFunc := joinTokenSource(joinTokenFile, os.Getenv("GPURENT_JOIN_TOKEN"))
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
			if !cmd.Flags().Changed("volume-quota-dir") && os.Getenv("GPURENT_VOLUME_QUOTA_DIR") == "" {
				volumeQuotaDir = filepath.Join(stateDir, "volumes")
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
			var initBin string // the docker runtime's
			regs := &agentruntime.Registries{}
			images, err := imageref.NewPolicy(imageref.ParseList(imageRegistries))
			if err != nil {
				return fmt.Errorf("--image-registries: %w", err)
			}
			var bench agent.BenchRunner
			if fp, ok := provider.(*fake.Provider); ok {
				// Fake GPUs measure nothing: their results are synthetic
				// (and say so), from the reference figures.
				bench = agent.SyntheticRunner{Performance: fp.Performance, Pace: 100 * time.Millisecond}
			}
			if maxImageGiB < 0 || maxImageGiB > 1<<20 {
				return fmt.Errorf("--max-image-gib must be 0 (no limit) to %d, got %d", 1<<20, maxImageGiB)
			}
			switch runtimeFlag {
			case "docker":
				allow, err := egress.ParseAllow(egressAllow)
				if err != nil {
					return fmt.Errorf("--instance-egress-allow: %w", err)
				}
				if initBin, err = initBinary(ctx, initBinFlag, "", log); err != nil {
					return err
				}
				d, err := docker.New(ctx, docker.Config{Logger: log, CarryLayer: carryLayer, InitBinary: initBin,
					Network: instanceNetwork, EgressAllow: allow, NetStateDir: filepath.Join(stateDir, "net"),
					VolumeQuotaDir: volumeQuotaDir, LayerQuota: layerQuota, LayerGiB: layerGiB, MaxImageBytes: maxImageGiB << 30,
					Registries: regs})
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
			ep, moves, err := startAccess(ctx, stateDir, listen, accessAdvertise, rt, initBin, log)
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
			a, err := agent.New(agent.Config{ServerURL: server, JoinToken: join, JoinTokenFunc: joinFunc, Name: name, Zone: zone,
				StateDir: stateDir, Runtime: rt, GPUs: provider, Logger: log, Version: Version, Access: ep, Transfers: moves,
				Bench: bench, Images: images, Registries: regs})
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", envOr("GPURENT_SERVER", "http://127.0.0.1:8080"), "control plane URL (env GPURENT_SERVER)")
	f.StringVar(&joinTokenFile, "join-token-file", os.Getenv("GPURENT_JOIN_TOKEN_FILE"),
		"file holding this host's one-time join token from `gpurent hosts join-token create` (or set GPURENT_JOIN_TOKEN); read when the agent registers (env GPURENT_JOIN_TOKEN_FILE)")
	f.StringVar(&joinToken, "join-token", "", "removed: a secret on the command line is readable by every user; use --join-token-file or GPURENT_JOIN_TOKEN")
	_ = f.MarkHidden("join-token")
	f.StringVar(&name, "name", "", "host name (default: the machine's hostname)")
	f.StringVar(&zone, "zone", os.Getenv("GPURENT_ZONE"), "zone id of this host (env GPURENT_ZONE)")
	f.StringVar(&stateDir, "state-dir", "", "where the agent keeps its credentials (default <data-dir>/agent)")
	f.StringVar(&runtimeFlag, "runtime", "docker", "instance runtime: docker, or process (demos only)")
	f.StringVar(&initBinFlag, "init-binary", "",
		"static gpurent executable (CGO_ENABLED=0, as `make build` makes) that Docker instances run as their init, PID 1, and sftp helper (default: env "+EnvInitBinary+", else this executable when static)")
	f.StringVar(&accessListen, "access-listen", envOr("GPURENT_ACCESS_LISTEN", AccessListenAdvertised),
		"where the SSH access server listens for the control plane's gateway: \""+AccessListenAdvertised+"\" only on the address --access-advertise names (or this machine's name's, port "+DefaultAccessPort+"), or host:port (\":2223\": every interface), \"\": none (env GPURENT_ACCESS_LISTEN)")
	f.StringVar(&accessAdvertise, "access-advertise", os.Getenv("GPURENT_ACCESS_ADVERTISE"),
		"host:port the gateway dials to reach this agent (default: this machine's name and the listen port) (env GPURENT_ACCESS_ADVERTISE)")
	f.StringVar(&instanceNetwork, "instance-network", envOr("GPURENT_INSTANCE_NETWORK", docker.NetworkPasta),
		"instances' network: pasta (each its own namespace and userspace NAT: the internet only, never another instance, the host or a private range; needs passt, nftables, root), none (no network), or a Docker network such as bridge (shared: instances reach each other and the host) (env GPURENT_INSTANCE_NETWORK)")
	f.StringVar(&egressAllow, "instance-egress-allow", os.Getenv("GPURENT_INSTANCE_EGRESS_ALLOW"),
		"with --instance-network pasta: CIDRs instances may reach although private or link-local, comma-separated, e.g. 10.8.0.0/16 for a package mirror (never the host's own addresses) (env GPURENT_INSTANCE_EGRESS_ALLOW)")
	f.StringVar(&volumeQuotaDir, "volume-quota-dir", os.Getenv("GPURENT_VOLUME_QUOTA_DIR"),
		"with the docker runtime: back each data volume with a loop-mounted ext4 image of its rented size here, so the size is enforced (default <state-dir>/volumes; \"\": sizes not enforced) (env GPURENT_VOLUME_QUOTA_DIR)")
	f.StringVar(&layerQuota, "layer-quota", envOr("GPURENT_LAYER_QUOTA", "warn"),
		"when Docker's storage driver cannot limit an instance's writable layer (it needs overlay2 on xfs with pquota): warn, require (refuse to start) or off (env GPURENT_LAYER_QUOTA)")
	f.Int64Var(&layerGiB, "layer-quota-gib", 50, "size limit of each instance's writable layer where the storage driver enforces one")
	f.Int64Var(&maxImageGiB, "max-image-gib", 50,
		"largest instance image this host pulls, in GiB unpacked (a pull is cut off once its layers pass it; images already on the host are not limited; 0: no limit)")
	f.StringVar(&gpuFlag, "gpus", "nvml", "GPU discovery: nvml (needs a build with -tags nvml) or fake")
	f.StringVar(&fakeGPUs, "fake-gpus", "h100-80g-sxm:8", "with --gpus fake: TYPE:COUNT")
	f.IntVar(&fakeGroup, "fake-group-size", 8, "with --gpus fake: GPUs per NVLink domain / PCIe switch")
	f.StringVar(&imageRegistries, "image-registries", envOr("GPURENT_IMAGE_REGISTRIES", imageref.DockerHub),
		"registries this agent pulls instance images from, comma-separated (* for any; env GPURENT_IMAGE_REGISTRIES): checked again before every run")
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
