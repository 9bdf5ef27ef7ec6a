// Package sshgate is the control plane's door into running instances: one SSH
// gateway that customers reach with the ordinary OpenSSH tools, and an HTTP
// handler that opens an instance's web ports (Jupyter, TensorBoard, ...) in
// the browser.
//
// # Why one relaying gateway
//
// Customers connect to a single address, `ssh -p 2222 <instance-id>@<control
// plane>`, and verify a single host key, whichever host the instance runs on
// today; instances move between hosts on upgrade, migration and failover, and
// a gateway per agent would change the address and the host key the customer
// has pinned each time. Hosts need no public address and no per-instance port.
// Authorisation (whose key, whose instance, is it running, how many sessions)
// happens in one place next to the store, and so does the audit log.
//
// The gateway authenticates the customer's public key against the keys
// registered on accounts, for the instance the SSH user name names (one key
// may be on several accounts; [Directory.AccountForKey]). Only after the client has
// proven it holds the private key does the gateway look up the instance named
// by the SSH user name ([Directory.Target]), apply the per-account connection
// limit and connect to the agent of the instance's host. Refusals at this
// point reach the client as an SSH banner, which OpenSSH prints on stderr. An
// instance of another account and an instance that does not exist give the
// same words, so nothing about other accounts leaks.
//
// Toward agents the gateway is an SSH client: it logs in to the agent's access
// server with the instance id as user name and its own client key, and it
// verifies the agent's host key reported at registration. One agent
// connection per (agent, instance) is shared by all customer connections to
// that instance and by the port proxy, and lingers briefly after its last user
// so that scp loops and browser reloads do not pay an SSH handshake each time.
//
// # What is relayed
//
// Session channels with their requests (pty-req, window-change, env, shell,
// exec, signal, subsystem, with replies), stdout, stderr, EOF, exit-status and
// exit-signal, in order: all of a command's output reaches the client before
// its exit status. direct-tcpip channels (`ssh -L`, `ssh -W`, VS Code) are
// relayed only to the instance's own loopback (127.0.0.0/8, ::1, localhost);
// the agent opens them inside the instance's network namespace. Everything
// else (remote forwarding, agent and X11 forwarding, other channel types) is
// refused. Every session, forward and refusal produces an audit [Record].
//
// # Browser access
//
// [PortProxy] serves instance ports on host names of their own:
// port P of instance I is at I-P.<ports domain> (a wildcard DNS name and
// certificate the operator points at the control plane; *.localhost on a
// laptop, which browsers resolve to loopback), never on the console's
// origin. The customer's application runs there, so its pages cannot read
// or send the console's cookies, and the proxy keeps them from setting
// any: Set-Cookie of a gpurent cookie is dropped, Domain attributes are
// removed (the app's cookies stay on its own host), Service-Worker-Allowed
// is dropped, and gpurent cookies never reach the application. The ports
// domain must share no cookies with the console's host name
// ([CheckPortsDomain] refuses the same name, a parent or a child).
//
// The API hands out a link made by [PortProxy.Link]: it carries a
// short-lived HMAC-SHA256 token (instance, port, account, expiry). The
// first visit exchanges it for an HttpOnly, SameSite=Lax, host-only cookie
// (no Domain attribute, Path=/) and redirects to the same address without
// the token. Requests are proxied with their path unchanged to
// 127.0.0.1:{port} inside the instance through a direct-tcpip channel of
// the agent connection; websockets work. The application is at / of its
// host: no base URL is needed, e.g.
//
//	jupyter lab --ip=0.0.0.0
//	tensorboard --logdir runs --bind_all
package sshgate
