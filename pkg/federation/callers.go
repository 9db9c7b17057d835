package federation

// This file holds what the gRPC adapter learns of a call's token at its
// headers (issue 53): whose token it is, whether it may hold an
// authenticated place, and why it is refused (unknown, or revoked).

// indexTokens adds rec's client tokens and revoked tokens to the indexes
// the gRPC adapter screens calls with (c.mu held or not yet shared).
func (c *Coordinator) indexTokens(rec *taskRecord) {
	for id, h := range rec.Clients {
		c.tokens[h] = tokenOwner{Task: rec.Spec.ID, Client: id}
	}
	for h, r := range rec.Revoked {
		delete(c.tokens, h)
		c.revoked[h] = r.reason(rec.Spec.ID)
	}
}

// tokenOwner is the client a token belongs to.
type tokenOwner struct{ Task, Client string }

// ownerKey names a client across tasks ("task/client"): the unit places
// and calls are counted by (ConnLimits.PerClient, MaxCallsPerClient).
func ownerKey(task, client string) string { return task + "/" + client }

// adminOwner is the owner key of the admin token.
const adminOwner = "(admin)"

// caller is what the gRPC adapter learns of a call's token at its headers.
type caller struct {
	key string // ownerKey of the token's client, or adminOwner
	// holdsPlace: the token may hold an authenticated place (the admin
	// token, or a client token of a task still open). A client token of a
	// task whose last round is fused may still read its results, on a
	// connection that stays unauthenticated (evictable, expiring).
	holdsPlace bool
	// refusal is why the call is refused at its headers: no or unknown
	// token, or a revoked one (with the reason); nil otherwise.
	refusal *Error
}

// callerOf classifies token (hashing it once; a cheap check for the gRPC
// adapter).
func (c *Coordinator) callerOf(token string) caller {
	if token == "" {
		return caller{refusal: errorf(CodeUnauthenticated, "missing or unknown bearer token")}
	}
	if c.isAdmin(Credentials{Token: token}) {
		return caller{key: adminOwner, holdsPlace: true}
	}
	h := HashToken(token)
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.tokens[h]; ok {
		return caller{key: ownerKey(o.Task, o.Client), holdsPlace: !c.done[o.Task]}
	}
	if r, ok := c.revoked[h]; ok {
		return caller{refusal: errorf(CodePermissionDenied, "%s", r)}
	}
	return caller{refusal: errorf(CodeUnauthenticated, "missing or unknown bearer token")}
}
