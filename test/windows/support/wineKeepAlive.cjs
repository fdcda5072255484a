// Loaded (node.exe -r) into the CLI client under Wine only. Wine 8 fails a TCP connect with
// "connect UNKNOWN" when keep-alive is switched on while the socket is still connecting, which is
// what fetch (undici) does on every connection; real Windows accepts it. Switching it on once the
// socket is connected leaves everything else the client does as it is.
'use strict';
const net = require('node:net');

const setKeepAlive = net.Socket.prototype.setKeepAlive;
net.Socket.prototype.setKeepAlive = function (enable, initialDelay) {
  if (this.connecting) {
    this.once('connect', () => setKeepAlive.call(this, enable, initialDelay));
    return this;
  }
  return setKeepAlive.call(this, enable, initialDelay);
};
