package userquestions

import "context"

// AttachWait opens a new claim on the wait of (sid, callID) for one of the
// Clients this answerer serves. Delivery.AttachWait keeps one claim per
// delivery, which suits an answerer with one Client; a gateway shares each
// Session's deliveries among all its Clients, so each Client holds a claim
// of its own and releases it itself (Claim.Release) when it delegates or
// goes away (W4).
func (a *Answerer) AttachWait(ctx context.Context, sid, callID string) (*Claim, error) {
	return attachWait(ctx, a.nc, a.js, sid, callID, a.bound)
}
