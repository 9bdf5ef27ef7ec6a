// Package access is the agent's SSH server: the far end of the control
// plane's SSH gateway. Customers never reach it directly; the gateway
// authenticates them, checks that they own the instance, and then opens an
// SSH connection here with the control plane's client key, as the user
// named by the instance id, relaying the customer's channels over it.
//
// The server gives that trusted client access into a managed instance
// through a runtime.Access, with no sshd in the image:
//
//   - "session" channels: a login shell or a command (exec through the
//     runtime, with a terminal on "pty-req", resized on "window-change"),
//     a safe subset of "env" (LANG, LC_*, TERM), "signal", exit-status and
//     exit-signal; and the "sftp" subsystem, served by a child process
//     (ServeSFTPChild, the hidden `gpurent agent-sftp` command) chrooted
//     into the instance's root file system, so that even an image without
//     sftp-server supports scp and sftp, and absolute symlinks inside the
//     instance cannot reach the host;
//   - "direct-tcpip" channels (ssh -L): a TCP connection dialled inside the
//     instance's network namespace, to loopback destinations only, so it
//     works for instances on --network none;
//   - keepalives, an idle timeout, and an audit event per session;
//   - with Config.Transfers, the receiving end of a moving instance's copy
//     from another agent: a password login (user: the move's operation id,
//     password: its token, checked by Transfers) that may open only
//     TransferChannelType channels.
//
// Everything else is refused: other users than a running instance of this
// runtime, keys other than the trusted ones, other channel types, and
// remote forwarding ("tcpip-forward").
package access
