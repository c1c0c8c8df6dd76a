// Loaded into a benchmarked server (node --expose-gc --require): on 'memory' from its parent,
// a full GC, then its memory: RSS, and V8's heap plus what lives outside it (buffers).
process.on('message', (message) => {
  if (message !== 'memory') return;
  global.gc?.();
  global.gc?.();
  const usage = process.memoryUsage();
  process.send?.({
    rss: usage.rss,
    heap: usage.heapUsed + usage.external + usage.arrayBuffers,
    heapTotal: usage.heapTotal,
  });
});
