// The page's one script (api/html.c embeds it; the page's Content-Security-Policy
// lets this exact text run and nothing else). It draws, on demand, the cards the
// page keeps as data: records of laid-out drawings, deflated and base64'd in
// script blocks of type application/x-tileopt, 256 a block. Model text
// reaches the page only through textContent, never as markup.
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var KIND = ['node', 'const', 'input', 'output'];
  var CLS = ['plain', 'removed', 'added', 'changed'];
  var chunks = {};
  function chunk(k) {
    if (!chunks[k]) {
      var b = atob(document.getElementById('z' + k).textContent.trim());
      var u = new Uint8Array(b.length);
      for (var i = 0; i < b.length; i++) u[i] = b.charCodeAt(i);
      var s = new Blob([u]).stream().pipeThrough(new DecompressionStream('deflate'));
      chunks[k] = new Response(s).text().then(JSON.parse);
    }
    return chunks[k];
  }
  function record(i) {
    return chunk(i >> 8).then(function (c) { return c[i & 255]; });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function drawing(d) {
    var s = sv('svg', {'class': 'g', viewBox: '0 0 ' + d[0] + ' ' + d[1], width: d[0], height: d[1], role: 'img'});
    d[3].forEach(function (e) {
      var p = e[0], path = '';
      for (var j = 0; j < p.length; j += 2) path += (j ? 'L' : 'M') + p[j] + ' ' + p[j + 1];
      s.appendChild(sv('path', {'class': 'e', d: path}));
      if (e[1]) s.appendChild(sv('text', {'class': 'el', x: p[0] + 4, y: p[1] + 13}, e[1]));
    });
    d[2].forEach(function (n) {
      var g = sv('g', {'class': KIND[n[4]] + ' ' + CLS[n[5] & 7] + (n[5] & 8 ? ' focus' : '')});
      g.appendChild(sv('title', {}, n[6] + ' ' + n[7]));
      g.appendChild(sv('rect', {x: n[0], y: n[1], width: n[2], height: n[3], rx: n[4] ? 12 : 4}));
      g.appendChild(sv('text', {x: n[0] + (n[2] >> 1), y: n[1] + 14, 'class': 'l1'}, n[6]));
      g.appendChild(sv('text', {x: n[0] + (n[2] >> 1), y: n[1] + n[3] - 6, 'class': 'l2'}, n[7]));
      s.appendChild(g);
    });
    if (!d[2].length) s.appendChild(sv('text', {'class': 'none', x: 10, y: 24}, 'nothing of this region is left'));
    return s;
  }
  // [node, op, action, pass, rule, details, before, after], as api/html.c writes a card
  function card(r) {
    var c = el('article', 'card A-' + r[2]);
    var h = el('h3');
    h.appendChild(el('span', 'act', r[2]));
    h.appendChild(document.createTextNode(' '));
    h.appendChild(el('span', 'op', r[1]));
    h.appendChild(document.createTextNode(' '));
    h.appendChild(el('code', null, r[0]));
    h.appendChild(document.createTextNode(' '));
    h.appendChild(el('span', 'pass', r[3]));
    c.appendChild(h);
    if (r[4]) c.appendChild(el('p', 'rule', r[4]));
    if (r[5]) c.appendChild(el('p', 'det', r[5]));
    var pair = el('div', 'pair');
    [6, 7].forEach(function (k) {
      var f = el('figure');
      f.appendChild(el('figcaption', null, k == 6 ? 'before' : 'after'));
      f.appendChild(drawing(r[k]));
      pair.appendChild(f);
    });
    c.appendChild(pair);
    return c;
  }
  function failed(slot, e) {
    slot.appendChild(el('p', 'err', 'cannot draw here: ' + e));
  }
  // a group of cards: the next 50 records on each call
  function more(g) {
    var first = +g.dataset.first, count = +g.dataset.count, shown = +(g.dataset.shown || 0);
    var slot = g.querySelector('.slot'), n = Math.min(50, count - shown), jobs = [];
    g.dataset.shown = shown + n;
    for (var i = 0; i < n; i++) jobs.push(record(first + shown + i));
    var btn = g.querySelector('button.more');
    if (btn && shown + n >= count) btn.remove();
    return Promise.all(jobs).then(function (rs) {
      rs.forEach(function (r) { slot.appendChild(card(r)); });
    }).catch(function (e) { failed(slot, e); });
  }
  document.addEventListener('toggle', function (ev) {
    var d = ev.target;
    if (!d.open || d.dataset.drawn) return;
    if (d.classList.contains('grp')) {
      d.dataset.drawn = 1;
      more(d);
    } else if (d.classList.contains('lazy')) {
      d.dataset.drawn = 1;
      var slot = d.querySelector('.slot');
      record(+d.dataset.r).then(function (r) { slot.appendChild(card(r)); })
        .catch(function (e) { failed(slot, e); });
    }
  }, true);
  document.addEventListener('click', function (ev) {
    var b = ev.target.closest && ev.target.closest('button.more');
    if (b) more(b.closest('details.grp'));
  });
  document.documentElement.dataset.ready = '1';
})();
