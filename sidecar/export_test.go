package sidecar

// ExpireNow runs one pass of the split-event and judgement expiry at the
// app's clock, as the background ticker does every second. End-to-end tests
// move their clock (Options.Now) past join.ttl and call it instead of
// waiting for the next tick.
func (a *App) ExpireNow() { a.expire(a.now()) }
