package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sched"
)

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", contentJSON)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
}

// --- accounts and tokens ---

func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.RegisterRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if ok, wait := s.limit.Address(clientAddr(r)); !ok {
		s.tooMany(w, r, wait)
		return
	}
	// Register keys are scoped to the e-mail: stored under the account
	// they made, looked up through the account holding the e-mail.
	email := strings.ToLower(strings.TrimSpace(req.Email))
	o := idem{keyPrefix: "register:", lockName: "register:" + email, body: body, scopeOf: accountIDOf,
		replayHeaders: func(int, []byte) http.Header { return http.Header{"Location": {"/api/v1/me"}} }}
	if _, present := r.Header[headerIdempotencyKey]; present {
		existing, err := s.store.AccountByEmail(r.Context(), email)
		switch {
		case err == nil:
			o.scope = existing.ID
		case !gpurent.IsCode(err, gpurent.CodeNotFound):
			s.writeProblem(w, r, err)
			return
		}
	}
	s.idempotent(w, r, o, func(w http.ResponseWriter) {
		acc, err := s.auth.Register(r.Context(), req.Email, req.Name, req.Password)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		w.Header().Set("Location", "/api/v1/me")
		bal, err := s.wallet.SpendableFen(r.Context(), acc.ID)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, accountView(acc, bal))
	})
}

// accountIDOf reads the id of a created account from its answer.
func accountIDOf(status int, body []byte) string {
	if status != http.StatusCreated {
		return ""
	}
	var a apiv1.Account
	if err := json.Unmarshal(body, &a); err != nil {
		return ""
	}
	return a.ID
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.LoginRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	addr := clientAddr(r)
	if ok, wait := s.limit.Login(req.Email, addr); !ok {
		s.tooMany(w, r, wait)
		return
	}
	secret, tok, acc, err := s.auth.Login(r.Context(), req.Email, req.Password)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.limit.Succeeded(req.Email, addr)
	bal, err := s.wallet.SpendableFen(r.Context(), acc.ID)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	resp := apiv1.LoginResponse{Token: secret, Account: accountView(acc, bal)}
	if tok.ExpiresAt != nil {
		t := tok.ExpiresAt.UTC()
		resp.ExpiresAt = &t
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	tok, ok := bearer(r)
	if !ok {
		s.writeProblem(w, r, errNoBearer())
		return
	}
	if err := s.auth.Logout(r.Context(), tok); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	bal, err := s.wallet.SpendableFen(r.Context(), acc.ID)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, accountView(acc, bal))
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body, redact: redactTokenSecret}, func(w http.ResponseWriter) {
		var req apiv1.CreateTokenRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		secret, tok, err := s.auth.CreateAPIToken(r.Context(), acc, req.Name)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, apiv1.Token{
			ID: tok.ID, Name: tok.Name, Kind: string(tok.Kind), Token: secret,
			CreatedAt: tok.CreatedAt.UTC(), ExpiresAt: tok.ExpiresAt,
		})
	})
}

// redactTokenSecret strips the secret from a stored token answer: only its
// hash is ever kept, so a replay confirms the token but cannot show it.
func redactTokenSecret(status int, body []byte) []byte {
	if status != http.StatusCreated {
		return body
	}
	var t apiv1.Token
	if err := json.Unmarshal(body, &t); err != nil {
		return nil
	}
	t.Token = ""
	b, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// --- catalog ---

func (s *Server) handleGPUTypes(w http.ResponseWriter, r *http.Request) {
	body, err := s.types.get(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, contentJSON, body)
}

// gpuTypesBody reads the fleet for GET /api/v1/gpu-types and encodes the
// answer.
func (s *Server) gpuTypesBody(ctx context.Context) ([]byte, error) {
	as, err := s.fleet.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	v := gpuTypeListView(as)
	if s.rental != nil {
		// What a new instance could get is the scheduler's answer: GPUs
		// held by a benchmark job are not free, and degraded GPUs are
		// counted apart, with their price range.
		counts, err := s.rental.Availability(ctx)
		if err != nil {
			return nil, err
		}
		placeable(&v, counts)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "encoding the answer failed")
	}
	return append(b, '\n'), nil
}

// placeable sets the free counts of v from the scheduler's availability
// (type → zone → counts): Free and MaxPerHost are the full-price GPUs,
// Degraded the GPUs listed as degraded, per zone and per type.
func placeable(v *apiv1.GPUTypeList, counts map[string]map[string]sched.Counts) {
	for i := range v.GPUTypes {
		t := &v.GPUTypes[i]
		t.Free, t.Degraded = 0, nil
		for j := range t.Zones {
			z := &t.Zones[j]
			c := counts[t.ID][z.ZoneID]
			z.Free, z.MaxPerHost, z.Degraded = c.Free, c.MaxPerHost, nil
			t.Free += c.Free
			if c.DegradedFree == 0 {
				continue
			}
			z.Degraded = &apiv1.DegradedAvailability{Free: c.DegradedFree, MaxPerHost: c.DegradedMaxPerHost,
				MinPricePermille: c.MinPricePermille, MaxPricePermille: c.MaxPricePermille}
			if t.Degraded == nil {
				d := *z.Degraded
				t.Degraded = &d
				continue
			}
			t.Degraded.Free += c.DegradedFree
			t.Degraded.MaxPerHost = max(t.Degraded.MaxPerHost, c.DegradedMaxPerHost)
			t.Degraded.MinPricePermille = min(t.Degraded.MinPricePermille, c.MinPricePermille)
			t.Degraded.MaxPricePermille = max(t.Degraded.MaxPricePermille, c.MaxPricePermille)
		}
	}
}

func (s *Server) handleZones(w http.ResponseWriter, r *http.Request) {
	zs, err := s.fleet.Zones(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, zoneListView(zs))
}

// handleSetZoneProbe sets the endpoint the console's zone latency test
// times for a zone (operators).
func (s *Server) handleSetZoneProbe(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SetZoneProbeRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	z, err := s.fleet.SetZoneProbe(r.Context(), acc, r.PathValue("id"), req.ProbeURL)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.Zone{ID: z.ID, Name: z.Name, Region: z.Region, ProbeURL: z.ProbeURL})
}

// --- instances ---

// instancePath is where an instance lives in the API.
func instancePath(id string) string { return "/api/v1/instances/" + id }

// instanceLocation rebuilds Location for a replayed create.
func instanceLocation(status int, body []byte) http.Header {
	if status != http.StatusCreated {
		return nil
	}
	var in apiv1.Instance
	if err := json.Unmarshal(body, &in); err != nil || in.ID == "" {
		return nil
	}
	return http.Header{"Location": {instancePath(in.ID)}}
}

func (s *Server) handleCreateInstance(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	o := idem{scope: acc.ID, body: body, replayHeaders: instanceLocation}
	s.idempotent(w, r, o, func(w http.ResponseWriter) {
		var req apiv1.CreateInstanceRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		switch {
		case req.NoGPU && req.GPUCount != 0:
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "no_gpu rents no GPUs: leave gpu_count out or 0, got %d", req.GPUCount))
			return
		case !req.NoGPU && req.GPUCount < 1:
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "gpu_count must be at least 1, got %d (or set no_gpu for no-GPU mode)", req.GPUCount))
			return
		case req.NoGPU && req.Degraded:
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "degraded is a listing of GPUs: it cannot go with no_gpu"))
			return
		}
		d, created, err := s.rental.Rent(r.Context(), acc, rental.RentRequest{
			Name:           req.Name,
			Image:          req.Image,
			TypeID:         req.GPUType,
			Count:          req.GPUCount,
			ZoneID:         req.Zone,
			Plan:           gpurent.Plan(req.Plan),
			VolumeGiB:      req.VolumeGiB,
			IdempotencyKey: r.Header.Get(headerIdempotencyKey),
			Degraded:       req.Degraded,
			StartupCommand: req.StartupCommand,
		})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
			w.Header().Set("Location", instancePath(d.Instance.ID))
		}
		writeJSON(w, status, instanceView(d, false))
	})
}

func (s *Server) handleListInstances(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	all, err := queryBool(r, "all")
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if all && acc.Role != gpurent.RoleOperator {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeForbidden, "all=true is for operators only"))
		return
	}
	ds, err := s.rental.List(r.Context(), acc, all)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, instanceListView(ds))
}

func (s *Server) handleGetInstance(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	d, err := s.rental.Get(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, instanceView(d, true))
}

func (s *Server) handleStopInstance(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	d, err := s.rental.Stop(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, instanceView(d, false))
}

func (s *Server) handleDeleteInstance(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	d, err := s.rental.Delete(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, instanceView(d, false))
}

// --- operator: hosts ---

func (s *Server) handleListHosts(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	hs, err := s.fleet.Hosts(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hostListView(hs))
}

func (s *Server) handleHostState(state gpurent.HostState) func(http.ResponseWriter, *http.Request, *gpurent.Account) {
	return func(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
		h, err := s.fleet.SetHostState(r.Context(), acc, r.PathValue("id"), state)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, hostView(h))
	}
}

// handleDrainHost takes a host out of placement and moves its running
// instances to other hosts; the host's state is answered at once, the moves
// go on (their operations show how far).
func (s *Server) handleDrainHost(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.incidents == nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable, "draining needs the incident service"))
		return
	}
	h, _, err := s.incidents.DrainHost(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hostView(h))
}

// --- agents ---

func (s *Server) handleAgentRegister(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req agentproto.RegisterRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	resp, err := s.fleet.Register(r.Context(), req)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleAgentDesired(w http.ResponseWriter, r *http.Request, host *gpurent.Host) {
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "query parameter after must be a generation (an integer >= 0), got %q", v))
			return
		}
		after = n
	}
	// A long poll outlives the server's write timeout; lift it here only.
	// Recorders in tests cannot, which changes nothing for them.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	d, err := s.rental.Desired(r.Context(), host.ID, after)
	if err != nil {
		if r.Context().Err() != nil {
			// The agent went away; nobody is left to answer.
			return
		}
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) handleAgentReport(w http.ResponseWriter, r *http.Request, host *gpurent.Host) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var rep agentproto.Report
	if err := decodeJSON(body, &rep); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if s.reports == nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable, "agents' reports are not taken by this server"))
		return
	}
	resp, err := s.reports.Apply(r.Context(), host, rep)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if s.access != nil && s.access.GatewayKey != nil {
		resp.GatewayKeys = []string{strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.access.GatewayKey)))}
	}
	writeJSON(w, http.StatusOK, resp)
}

// AgentReports applies an agent's report and answers what the agent is
// told (internal/agentreport).
type AgentReports interface {
	Apply(ctx context.Context, host *gpurent.Host, rep agentproto.Report) (agentproto.ReportResponse, error)
}
