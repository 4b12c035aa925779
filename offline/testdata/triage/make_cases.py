#!/usr/bin/env python3
"""Writes the input files of the golden cases in this directory (see
../golden_cases.py)."""
import json, os, sys
BASE=os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode=True # no __pycache__ in testdata
sys.path.insert(0, os.path.dirname(BASE))
from golden_cases import write_case, J
def case(name, trace, chunks, err=None, divergent=False):
    write_case(BASE, name, (('trace.jsonl',trace),('chunks.json',chunks)), err=err, divergent=divergent)
def T(q, ans=None, ids=(), **kw):
    o={"q":q}
    if ans is not None: o["answer"]=ans
    o["chunks"]=[{"id":i} for i in ids]
    o.update(kw); o.setdefault("ok", True)
    return J(o)
C=lambda items: json.dumps([{"id":i,"text":t} for i,t in items], ensure_ascii=False, indent=1)

chunks=C([("p1#1","X is a key-value store. X rejects null keys and empty values."),
          ("p1#2","Y supports TTL on every key."),
          ("p2#1","Unrelated text about gardening and tomatoes.")])
trace=[
 T("What is X?","X rejects null keys. citations: [p1#1]",["p1#1","p1#2"]),
 T("What is Z?","not in context",["p1#2"]),
 T("What is X?","X rejects null keys.",["p1#1"]),
 T("What is X?","X rejects null keys. citations: [p9#9]",["p1#1"]),
 T("What is X?","X rejects null keys. citations: [p1#1]",["p2#1"]),
 T("What does X reject?","Nothing relevant here. citations: [p1#1]",["p1#1"]),
 T("What does X reject?","NOT IN CONTEXT",["p1#1"]),
 T("Is it?","citations: []",["p1#1"]),
 T("What is X?","citations: [p1#1,,p1#2 ,]",["p1#1"]),
]
case('basic', '\n'.join(trace)+'\n', chunks)

# Unicode, case-folding and white-space quirks
chunks=C([("a","Die Straße ist lang. İstanbul ve ſehr. Kelvin \u212a. ΟΔΟΣ ΚΑΛΟΣ. cafe\u0301 naïve ΣΑΣ"),
          ("b","Vertical\x0btab and\x1cfile separator\u3000ideographic space and\u00a0nbsp; 東京都 ١٢٣ snake_case_word"),
          ("c","alpha beta"),("d","gamma delta"),
          ("e","line one\u2028line two\x85next")])
trace=[
 T("straße?","Die Straße ist lang. citations: [a]",["a"]),
 T("kelvin?","cıtatıons: [a]",["a"]),
 T("kelvin?","CİTATİONS:[a]",["a"]),
 T("kelvin?","citationſ\u3000:\x0b[ a\x1cb\u2028,\x85c ]",["a","b","c"]),
 T("kelvin?","CITATIONS : [a]",["a"]),
 T("kelvin?","citations\u200b: [a]",["a"]),
 T("kelvin?","NOT İN CONTEXT",["a"]),
 T("unrelated?","Not In Context",["a"]),
 T("ΟΔΟΣ","Nothing. citations: [a]",["a"]),
 T("οδος?","citations: [a] Nothing.",["a"]),
 T("οδοσ?","citations: [a] Nothing.",["a"]),
 T("ΚΑΛΟΣ?","citations: [a] Nothing.",["a"]),
 T("café?","citations: [a] zzzzz",["a"]),
 T("cafe?","citations: [a] zzzzz",["a"]),
 T("İstanbul?","citations: [a]",["a"]),
 T("stanbul?","citations: [a]",["a"]),
 T("東京都","citations: [b]",["b"]),
 T("١٢٣","citations: [b]",["b"]),
 T("snake_case_word","citations: [b]",["b"]),
 T("snake","citations: [b]",["b"]),
 T("What vertical tab?","Vertical\x0btab citations: [b]",["b"]),
 T("What vertical tab?","vertical\x1cfile citations: [b]",["b"]),
 T("separator?","file separator\u3000ideographic citations:[b]",["b"]),
 T("separator?","separator\u00a0 citations:[b]",["b"]),
 T("alpha?","beta\n\ngamma citations: [c, d]",["c","d"]),
 T("alpha?","xxxx \u3000 citations: [c]",["c"]),
 T("alpha?","ab-cd-e citations: [c]",["c"]),
 T("two?","line one\u2028line two citations: [e]",["e"]),
 T("naïve?","naïve answer citations: [a]",["a"]),
 T("naive?","citations: [a]",["a"]),
 T("σας","citations: [a]",["a"]),
 T("ab","citations: [a]",["a"]),
 T("","citations: [a]",["a"]),
 T("Wait… what?","Ünïcödé 😀 citations: [a]",["a"]),
 T("x","citations:[a citations:[b]",["a","b"]),
 T("x","citations:[a and no close citations:[b",["a","b"]),
 T("x","citations :[\ta\t] citations: [zz]",["a"]),
]
case('unicode', '\n'.join(trace)+'\n', chunks)

# chunks.json quirks: later duplicates win, non-string ids are unreachable,
# non-string text is fine while no trace uses it, missing ids give no evidence
chunks=json.dumps([{"id":"d","text":"first version"},{"id":"d","text":"second version beta"},
  {"id":5,"text":"number id"},{"id":None,"text":7},{"id":True,"text":"bool"},{"id":"unused","text":{"a":1}},
  {"id":"over","text":[1]},{"id":"over","text":"overridden ok"},{"id":"e","text":"","extra":[1,{"b":None}]}])
trace=[
 T("second?","second version citations: [d]",["d"]),
 T("first?","first version citations: [d]",["d"]),
 T("number?","number id citations: [5]",["5"]),
 T("overridden?","overridden ok citations: [over]",["over"]),
 T("empty?","citations: [e]",["e","nope"]),
 J({"q":"no chunks key","answer":"citations: []"}),
 J({"q":"no answer key","chunks":[{"id":"d"}]}),
 J({"q":"ids missing","answer":"second version citations: [d]","chunks":[{"ID":"d"},{},{"id":"d","score":0.5}]}),
 '{"q":"second","answer":"second version citations: [d]","chunks":[],"extra":{"deep":[[[[1e400, -0, 1E-999]]]]}}',
]
case('chunks_quirks', '\n'.join(trace)+'\n', chunks)

# blank lines by str.strip(), universal newlines, JSON white space around
chunks=C([("a","alpha beta gamma")])
lines=[T("alpha?","alpha beta citations: [a]",["a"]), T("zeta?","not in context",["a"]), T("gamma?","gamma citations: [a]",["a"])]
text=(' \t'+lines[0]+' \r\n'
      '\x0b\x0c\x1c\x1d\x1e\x1f\u00a0\u3000\u2028\x85\n'
      '\r'
      '\t'+lines[1]+'\r'
      '\r\n'
      +lines[2])
case('blank_lines', text, chunks)
case('empty_trace', '', '[]')
case('only_blank', '\n \n\u3000\r\n', ' \n[ ]\n ')
case('deep_ok', '{"q":"x","x":' + '['*994 + ']'*994 + '}\n', '[{"id":"a","text":"b","x":' + '['*991 + ']'*991 + '}]')
case('long_int_ok', '{"q":"x","x":' + '9'*4300 + '}\n', '[{"id":"a","text":"b","x":-' + '1'*4300 + '}]')

# errors the reference crashes on too
chunks=C([("a","alpha")])
E=lambda name, trace, err, chunks=chunks: case(name, trace, chunks, err=err)
E('err_q_missing', J({"answer":"x"})+'\n', 'trace.jsonl:1: field "q": missing')
E('err_q_number', T("ok","citations: [a]",["a"])+'\n'+J({"q":5})+'\n', 'trace.jsonl:2: field "q": want a string, got a number')
E('err_answer_null', J({"q":"x","answer":None})+'\n', 'trace.jsonl:1: field "answer": want a string, got null')
E('err_chunks_null', J({"q":"x","chunks":None})+'\n', 'trace.jsonl:1: field "chunks": want an array of objects, got null')
E('err_chunks_number', J({"q":"x","chunks":3})+'\n', 'trace.jsonl:1: field "chunks": want an array of objects, got a number')
E('err_chunk_item_null', J({"q":"x","chunks":[None]})+'\n', 'trace.jsonl:1: field "chunks[0]": want an object, got null')
E('err_chunk_item_idstring', J({"q":"x","chunks":["id"]})+'\n', 'trace.jsonl:1: field "chunks[0]": want an object, got a string')
E('err_chunk_id_list', J({"q":"x","chunks":[{"id":["a"]}]})+'\n', 'trace.jsonl:1: field "chunks[0].id": want a string, got an array')
E('err_leading_vt', '\x0b'+T("x","y",["a"])+'\n', 'trace.jsonl:1: invalid JSON')
E('err_trailing_nbsp', T("x","y",["a"])+'\u00a0\n', 'trace.jsonl:1: invalid JSON')
E('err_invalid_json', '{"q": "x"\n', 'trace.jsonl:1: invalid JSON')
E('err_top_level_list', '["q"]\n', 'trace.jsonl:1: want a JSON object, got an array')
E('err_invalid_utf8', T("x","y",["a"])+'\n\udcc3(\n', 'trace.jsonl:2: invalid UTF-8')
E('err_too_deep', '{"q":"x","x":' + '['*995 + ']'*995 + '}\n', 'trace.jsonl:1: nested deeper than 995 levels')
E('err_long_int', '{"q":"x","x":' + '1'*4301 + '}\n', 'trace.jsonl:1: integer with 4301 digits')
E('err_text_number_used', T("x","y",["n"])+'\n', 'field "text": want a string, got a number', chunks=json.dumps([{"id":"n","text":1}]))
E('err_chunks_not_json', '', 'chunks.json: invalid JSON', chunks='[{"id":"a","text":"b"},]')
E('err_chunks_missing_text', '', 'chunks.json: item 1: field "text": missing', chunks=json.dumps([{"id":"a","text":"b"},{"id":"c"}]))
E('err_chunks_missing_id', '', 'chunks.json: item 0: field "id": missing', chunks=json.dumps([{"text":"b"}]))
E('err_chunks_item_string', '', 'chunks.json: item 0: want an object, got a string', chunks=json.dumps(["a"]))
E('err_chunks_id_object', '', 'chunks.json: item 0: field "id": want a string, got an object', chunks=json.dumps([{"id":{},"text":"b"}]))
E('err_chunks_null', '', 'chunks.json: want a JSON array', chunks='null')
E('err_chunks_bom', '', 'chunks.json: invalid JSON', chunks='\ufeff[]')
E('err_chunks_invalid_utf8', '', 'chunks.json: invalid UTF-8', chunks='[{"id":"a","text":"\udcff"}]')
E('err_chunks_too_deep', '', 'chunks.json: nested deeper than 993 levels', chunks='[{"id":"a","text":"b","x":' + '['*992 + ']'*992 + '}]')
E('err_chunks_long_int', '', 'chunks.json: integer with 4301 digits', chunks='[' + '1'*4301 + ']')

# refused on purpose although the reference accepts them
def D(name, trace, err, chunks=chunks): case(name, trace, chunks, err=err, divergent=True)
D('div_duplicate_key', '{"q":"x","q":"y"}\n', 'trace.jsonl:1: invalid JSON: jsontext: duplicate object member name "q"')
D('div_nan', '{"q":"x","score":NaN}\n', 'trace.jsonl:1: invalid JSON')
D('div_lone_surrogate', '{"q":"x","answer":"\\udfff citations: []"}\n', 'trace.jsonl:1: invalid JSON: jsontext: invalid surrogate pair')
E('err_lone_surrogate_printed', T("x","y",["a"])+'\n{"q":"\\udfff"}\n', 'trace.jsonl:2: invalid JSON: jsontext: invalid surrogate pair')
D('div_chunks_string', J({"q":"x","chunks":"abc"})+'\n', 'trace.jsonl:1: field "chunks": want an array of objects, got a string')
D('div_chunk_item_string', J({"q":"x","chunks":["abc"]})+'\n', 'trace.jsonl:1: field "chunks[0]": want an object, got a string')
D('div_chunk_id_number', J({"q":"x","chunks":[{"id":5}]})+'\n', 'trace.jsonl:1: field "chunks[0].id": want a string, got a number')
D('div_chunks_object', '', 'chunks.json: want a JSON array', chunks='{}')
D('div_chunks_empty_string', '', 'chunks.json: want a JSON array', chunks='""')
D('div_chunks_duplicate_key', '', 'chunks.json: invalid JSON: jsontext: duplicate object member name "id"', chunks='[{"id":"a","id":"b","text":""}]')

# phrase containment with controlled phrase boundaries
chunks=C([("b","Vertical\x0btab and\x1cfile separator\u3000ideographic space and\u00a0nbsp"),
          ("c","alpha beta"),("d","gamma delta"),("f","abcd efg ab-cd-e naïve answer Kelvin İstanbul"),
          ("g","ΟΔΟΣ ΚΑΛΟΣ")])
trace=[
 T("vertical?","Vertical\x0btab. citations: [b]",["b"]),
 T("vertical?","vertical\x0btab. citations: [b]",["b"]),
 T("vertical?","Vertical tab. citations: [b]",["b"]),
 T("file?","and\x1cfile separator. citations:[b]",["b"]),
 T("file?","and\x1dfile separator. citations:[b]",["b"]),
 T("space?","separator\u3000ideographic. citations:[b]",["b"]),
 T("space?","and\u00a0nbsp; citations:[b]",["b"]),
 T("alpha?","beta\n\ngamma. citations: [c, d]",["c","d"]),
 T("alpha?","beta\ngamma. citations: [c, d]",["c","d"]),
 T("abcd?","abcd \u3000. citations: [f]",["f"]),
 T("abcd?","abcd e. citations: [f]",["f"]),
 T("abcd?","ab-cd-e! citations: [f]",["f"]),
 T("abcd?","ALPHA BETA. citations: [c]",["c"]),
 T("answer?","naïve answer. citations: [f]",["f"]),
 T("kelvin?","\u212aelvin. citations: [f]",["f"]),
 T("istanbul?","Istanbul. citations: [f]",["f"]),
 T("i̇stanbul?","citations: [f]",["f"]),
 T("stanbul?","citations: [f]",["f"]),
 T("οδος","ΟΔΟΣ. citations: [g]",["g"]),
 T("καλοσ","ΚΑΛΟΣ. citations: [g]",["g"]),
 T("x","1234. citations: [g]",["g"]),
 T("x","12345 citations: [g]",["g"]),
 T("alpha","not in context. citations: [c]",["c"]),
 T("alpha","Not\u00a0in context",["c"]),
 T("alpha","NOT IN CONTEXT (alpha)",["c"]),
]
case('phrases', '\n'.join(trace)+'\n', chunks)
