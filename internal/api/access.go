package api

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// Access is how customers reach instances: the SSH gateway's public address
// and host key, and the browser port links.
type Access struct {
	// SSHAddr is the gateway's address as customers dial it (host:port).
	SSHAddr string
	// HostKey is the gateway's host key.
	HostKey ssh.PublicKey
	// GatewayKey is the key the gateway signs in to agents with: agents
	// learn it from their report answers.
	GatewayKey ssh.PublicKey
	// Link makes a browser link (an absolute URL on the port's own host
	// name, with its token) to an HTTP port of the instance for the
	// account, valid for ttl; nil when port links are off.
	Link func(instanceID string, port int, accountID string, ttl time.Duration) string
	// Proxy serves the links: every request whose Host header PortHost
	// claims goes to it, and nothing else does.
	Proxy http.Handler
	// PortHost reports whether a Host header names the ports domain (the
	// port hosts and any other name under it).
	PortHost func(host string) bool
}

// portHost reports whether r is for the port proxy's host names.
func (s *Server) portHost(r *http.Request) bool {
	return s.access != nil && s.access.Proxy != nil && s.access.PortHost != nil && s.access.PortHost(r.Host)
}

// linkTTL is how long a port link may be opened for the first time.
const linkTTL = 10 * time.Minute

func sshKeyView(k *gpurent.SSHKey) apiv1.SSHKey {
	return apiv1.SSHKey{ID: k.ID, Name: k.Name, PublicKey: k.PublicKey, Fingerprint: k.Fingerprint, CreatedAt: k.CreatedAt.UTC(),
		LastUsedAt: k.LastUsedAt}
}

func (s *Server) handleListSSHKeys(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	keys, err := s.sshKeys.List(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := make([]apiv1.SSHKey, 0, len(keys))
	for i := range keys {
		out = append(out, sshKeyView(&keys[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAddSSHKey(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.AddSSHKeyRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		k, err := s.sshKeys.Add(r.Context(), acc, req.PublicKey, req.Name)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, sshKeyView(k))
	})
}

func (s *Server) handleDeleteSSHKey(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if err := s.sshKeys.Delete(r.Context(), acc, r.PathValue("id")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// gatewayOff answers when this control plane runs no SSH gateway.
func gatewayOff() error {
	return gpurent.Errorf(gpurent.CodeUnavailable, "this control plane runs no SSH gateway (gpurent serve --ssh-listen)")
}

func (s *Server) handleInstanceAccess(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.access == nil || s.access.HostKey == nil {
		s.writeProblem(w, r, gatewayOff())
		return
	}
	d, err := s.rental.Get(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	host, portText, err := net.SplitHostPort(s.access.SSHAddr)
	if err != nil {
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeInternal, err, "the gateway address %q is not host:port", s.access.SSHAddr))
		return
	}
	port, _ := strconv.Atoi(portText)
	id := d.Instance.ID
	hostKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.access.HostKey)))
	known := host
	if port != 22 {
		known = "[" + host + "]:" + portText
	}
	cmd := "ssh " + id + "@" + host
	if port != 22 {
		cmd = "ssh -p " + portText + " " + id + "@" + host
	}
	writeJSON(w, http.StatusOK, apiv1.InstanceAccess{InstanceID: id, Host: host, Port: port, User: id, SSHCommand: cmd,
		HostKey: hostKey, HostKeyFingerprint: ssh.FingerprintSHA256(s.access.HostKey), KnownHostsLine: known + " " + hostKey,
		Running: d.Instance.State == gpurent.StateRunning})
}

func (s *Server) handlePortLink(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.access == nil {
		s.writeProblem(w, r, gatewayOff())
		return
	}
	if s.access.Link == nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable,
			"this control plane serves no port links (gpurent serve --ports-domain)"))
		return
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "port must be a number from 1 to 65535"))
		return
	}
	d, err := s.rental.Get(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if d.Instance.State != gpurent.StateRunning {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s: its ports open while it runs", d.Instance.ID, d.Instance.State))
		return
	}
	now := s.now()
	writeJSON(w, http.StatusOK, apiv1.PortLink{InstanceID: d.Instance.ID, Port: port,
		URL: s.access.Link(d.Instance.ID, port, d.Instance.AccountID, linkTTL), ExpiresAt: now.Add(linkTTL).UTC()})
}

func (s *Server) handleAccessSessions(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	of := acc.ID
	if r.URL.Query().Get("all") == "true" {
		if acc.Role != gpurent.RoleOperator {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeForbidden, "only operators read every account's sessions"))
			return
		}
		of = ""
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "limit must be 1 to 1000"))
			return
		}
		limit = n
	}
	list, err := s.store.ListAccessSessions(r.Context(), of, limit)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := make([]apiv1.AccessSession, 0, len(list))
	for _, a := range list {
		out = append(out, apiv1.AccessSession{ID: a.ID, InstanceID: a.InstanceID, Kind: a.Kind, Detail: a.Detail,
			ClientAddr: a.ClientAddr, StartedAt: a.StartedAt.UTC(), EndedAt: a.EndedAt, ExitStatus: a.ExitStatus,
			BytesIn: a.BytesIn, BytesOut: a.BytesOut})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleOldPortPath answers the console's host for /p/...: instance ports
// are no longer served in the console's origin, only on their own host
// names.
func (s *Server) handleOldPortPath(w http.ResponseWriter, r *http.Request) {
	s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeNotFound,
		"instance ports are served on their own host names, not here: open the port again from the console or with `gpurent open`"))
}
