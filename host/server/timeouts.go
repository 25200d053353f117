package server

import (
	"time"
)

// The server's timeouts. A client must send its request headers within
// ReadHeaderTimeout and its whole request within ReadTimeout, so a client
// that sends slowly (slowloris) is closed; a body must also keep coming
// (BodyGrace, MinBodyRate), or it is answered 408 long before ReadTimeout. Every write of a response must
// finish within WriteTimeout of its start: the deadline is moved on as
// each write (each event of a stream) begins, so a stream lasts as long as
// its run, but a client that stops reading is dropped and what its
// response held is freed. An idle keep-alive connection is closed after
// IdleTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
)

// A request body must keep arriving: after BodyGrace from the end of the
// headers, at least MinBodyRate bytes a second on average, and all of it
// within ReadTimeout. A body that falls behind is answered 408
// (body_timeout) as soon as it does, so a client trickling a byte a second
// holds a connection for seconds, not the minute of ReadTimeout. The rate
// is what any link manages (8 kbit/s); Kestrel's minimum body rate works
// the same way (240 bytes a second after a 5 s grace).
const (
	BodyGrace   = 5 * time.Second
	MinBodyRate = 1 << 10
)
