// Package transfer is the agent-to-agent copy channel of a moving instance
// (issue #5): the source agent pushes the instance's data volume and its
// container's writable layer to the target agent, incrementally, with
// internal/delta, over SSH to the target's access server (internal/access).
//
// The control plane gives both ends of a move its operation id; the source
// also gets the operation's token and the target's address and host key,
// the target only the token's SHA-256. Push (source side) dials the target,
// pins its host key exactly, logs in by password as the operation id with
// the token, and sends each tree in a channel of type
// access.TransferChannelType whose extra data names the tree and the pass
// ("volume live", "layer final"). Both trees go at once, on two channels of
// one connection.
//
// The Receiver (target side) is the access server's Transfers: it admits a
// login only for an operation it was told to Expect, with a token whose
// hash matches (compared in constant time), runs delta.Receive into the
// named tree's directory, and answers like an exec session: on failure the
// reason on the channel's extended data, then exit-status (0: the pass is
// applied and synced). One pass per tree directory runs at a time; a
// second one is refused.
//
// Live passes run while the instance runs; the final pass, with the
// instance stopped, makes the target equal to the source. What the
// instance is stopped for is the final pass alone, which moves only what
// changed since the last live pass.
package transfer
