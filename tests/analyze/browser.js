// Open HTML reports in headless Chromium and measure what a reader meets:
// console errors, a page wider than the screen, where the summary is, how
// large chart text is drawn. Node's standard library only: Chromium is
// driven over --remote-debugging-pipe (the DevTools protocol, JSON messages
// ended by a NUL byte, on file descriptors 3 and 4).
//
// usage: node browser.js CHROMIUM OUTDIR WIDTHxHEIGHT[,...] REPORT.html...
// Prints one JSON line per report and width; writes OUTDIR/NAME-WIDTH.png
// (the first screen) and OUTDIR/NAME-WIDTH-full.png (the whole page, every
// <details> open). Exits 0 when every page was measured; the checks are the
// caller's (browser.sh), so that a failure names the figure.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [chromium, outdir, sizes, ...reports] = process.argv.slice(2);
if (!chromium || !outdir || !sizes || reports.length === 0) {
    console.error('usage: node browser.js CHROMIUM OUTDIR WxH[,WxH...] REPORT.html...');
    process.exit(2);
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lt-chromium-'));
const proc = spawn(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-extensions', '--hide-scrollbars', '--mute-audio',
    '--user-data-dir=' + profile, '--remote-debugging-pipe', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
proc.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });

// A bound on the whole run, so a hung browser fails the test instead of
// stalling the suite (not a timing assertion: nothing is measured by it).
const guard = setTimeout(() => done(1, 'chromium did not finish within 240 s'), 240000);
let exited = false, finishing = false, closing = false;
function done(code, msg) {
    if (finishing) return;
    finishing = true;
    if (msg)
        console.error('browser.js: ' + msg + (stderr ? '\nchromium stderr: ' + stderr : ''));
    clearTimeout(guard);
    // The profile goes once chromium is gone (it writes there until then).
    const clean = () => {
        // (its helper processes may write a little longer: retry)
        try { fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }); } catch (e) { /* left in tmp */ }
        process.exit(code);
    };
    if (exited) return clean();
    proc.once('exit', clean);
    try { proc.kill('SIGKILL'); } catch (e) { clean(); }
}
proc.on('error', (e) => done(1, 'cannot start ' + chromium + ': ' + e.message));
proc.on('exit', (c, s) => {
    exited = true;
    if (closing) done(0); /* asked to close: it may not answer first */
    else if (!finishing) done(1, 'chromium exited (' + (c ?? s) + ')');
});

let nextId = 1, inbuf = Buffer.alloc(0);
const pending = new Map(), listeners = [];
proc.stdio[4].on('data', (d) => {
    inbuf = Buffer.concat([inbuf, d]);
    let z;
    while ((z = inbuf.indexOf(0)) >= 0) {
        const msg = JSON.parse(inbuf.subarray(0, z).toString('utf8'));
        inbuf = inbuf.subarray(z + 1);
        if (msg.id && pending.has(msg.id)) {
            const { resolve, reject, method } = pending.get(msg.id);
            pending.delete(msg.id);
            if (msg.error) reject(new Error(method + ': ' + msg.error.message));
            else resolve(msg.result);
        } else if (msg.method) {
            for (const l of listeners) l(msg);
        }
    }
});
function send(method, params = {}, sessionId) {
    const id = nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    proc.stdio[3].write(JSON.stringify(msg) + '\0');
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}
function once(method, sessionId) {
    return new Promise((resolve) => {
        const l = (m) => {
            if (m.method === method && m.sessionId === sessionId) {
                listeners.splice(listeners.indexOf(l), 1);
                resolve(m.params);
            }
        };
        listeners.push(l);
    });
}

// What the page is like, measured in it.
const MEASURE = `(() => {
    const de = document.documentElement, r = {};
    r.scrollWidth = de.scrollWidth;
    r.clientWidth = de.clientWidth;
    r.innerHeight = window.innerHeight;
    r.viewport = !!document.querySelector('meta[name=viewport]');
    const s = document.getElementById('summary');
    if (s) {
        const b = s.getBoundingClientRect();
        r.summaryTop = b.top + window.scrollY;
        r.summaryBottom = b.bottom + window.scrollY;
        r.summaryTag = s.tagName.toLowerCase();
    }
    // Chart text: its drawn size is the font size times the SVG's scale.
    r.charts = 0;
    r.minChartFontPx = null;
    r.hoverTitles = [];
    for (const svg of document.querySelectorAll('figure svg')) {
        r.charts++;
        const vb = svg.viewBox && svg.viewBox.baseVal;
        const w = svg.getBoundingClientRect().width;
        if (!vb || !vb.width || !w) continue;
        for (const g of svg.querySelectorAll('[font-size]')) {
            if (!g.querySelector('text') && g.tagName !== 'text') continue;
            const px = parseFloat(g.getAttribute('font-size')) * w / vb.width;
            if (r.minChartFontPx === null || px < r.minChartFontPx) r.minChartFontPx = px;
        }
        for (const t of svg.querySelectorAll('title')) r.hoverTitles.push(t.textContent);
    }
    // Text that is cut: a figure or table box wider than the page.
    r.overflowing = [];
    for (const el of document.querySelectorAll('body > *')) {
        const b = el.getBoundingClientRect();
        if (b.right > de.clientWidth + 1) r.overflowing.push(el.tagName + (el.id ? '#' + el.id : ''));
    }
    r.details = document.querySelectorAll('details').length;
    r.h1 = (document.querySelector('h1') || {}).textContent || '';
    return JSON.stringify(r);
})()`;

async function visit(file, width, height) {
    const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
    const errors = [];
    const l = (m) => {
        if (m.sessionId !== sessionId) return;
        if (m.method === 'Runtime.exceptionThrown')
            errors.push('exception: ' + m.params.exceptionDetails.text);
        else if (m.method === 'Runtime.consoleAPICalled' && m.params.type === 'error')
            errors.push('console.error: ' + m.params.args.map((a) => a.value).join(' '));
        else if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error')
            errors.push('log: ' + m.params.entry.text);
    };
    listeners.push(l);
    await send('Runtime.enable', {}, sessionId);
    await send('Log.enable', {}, sessionId);
    await send('Page.enable', {}, sessionId);
    await send('Emulation.setDeviceMetricsOverride',
        { width, height, deviceScaleFactor: 1, mobile: width < 600 }, sessionId);
    const loaded = once('Page.loadEventFired', sessionId);
    await send('Page.navigate', { url: 'file://' + path.resolve(file) }, sessionId);
    await loaded;
    const ev = await send('Runtime.evaluate', { expression: MEASURE, returnByValue: true }, sessionId);
    if (ev.exceptionDetails) throw new Error('measuring ' + file + ': ' + ev.exceptionDetails.text);
    const m = JSON.parse(ev.result.value);
    const base = path.join(outdir, path.basename(file, '.html') + '-' + width);
    let shot = await send('Page.captureScreenshot', { format: 'png' }, sessionId);
    fs.writeFileSync(base + '.png', Buffer.from(shot.data, 'base64'));
    // The whole page with every section open, for a person to look at.
    const ex = await send('Runtime.evaluate', {
        expression: 'document.querySelectorAll("details").forEach(d => d.open = true);' +
            'document.documentElement.scrollHeight', returnByValue: true }, sessionId);
    const full = Math.min(ex.result.value, 16000);
    m.openScrollWidth = (await send('Runtime.evaluate', {
        expression: 'document.documentElement.scrollWidth', returnByValue: true }, sessionId)).result.value;
    await send('Emulation.setDeviceMetricsOverride',
        { width, height: full, deviceScaleFactor: 1, mobile: width < 600 }, sessionId);
    shot = await send('Page.captureScreenshot', { format: 'png' }, sessionId);
    fs.writeFileSync(base + '-full.png', Buffer.from(shot.data, 'base64'));
    listeners.splice(listeners.indexOf(l), 1);
    await send('Target.closeTarget', { targetId });
    m.file = path.basename(file);
    m.width = width;
    m.errors = errors;
    return m;
}

(async () => {
    for (const f of reports)
        for (const wh of sizes.split(',')) {
            const [w, h] = wh.split('x').map(Number);
            console.log(JSON.stringify(await visit(f, w, h)));
        }
    closing = true;
    await send('Browser.close').catch(() => {});
    done(0);
})().catch((e) => done(1, e.message));
