// Package thread is the runtime beside the graph engine (package graph):
// it keeps a store's threads and runs the engine on them. An App is a
// compiled graph bound to a checkpoint store (Compile): a run claims its
// thread in the store (a lease, renewed while it runs), reads the thread's
// latest checkpoint (from a cache of decoded threads when it is current),
// takes its input's media in, hands the thread to the engine and writes
// what the engine saves, when the run's durability says. Its Waker wakes
// the paused threads whose interrupts passed their deadline, in every
// process that serves the store, so that a thread waiting for an answer
// that never comes goes on without it.
package thread
