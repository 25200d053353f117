// Preload for the tests (node --import ./loopback.mjs ...): server-everything
// listens on a bare port, that is on every interface; this binds such
// servers to 127.0.0.1 instead, and prints the port actually bound (PORT=0
// picks a free one) as "tenxgraph-test-port=N" on stderr.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if (typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) {
    const callbacks = args.slice(1).filter((a) => typeof a === "function");
    this.once("listening", () => {
      process.stderr.write(`tenxgraph-test-port=${this.address().port}\n`);
    });
    return listen.call(this, { port: Number(port), host: "127.0.0.1" }, ...callbacks);
  }
  return listen.apply(this, args);
};
