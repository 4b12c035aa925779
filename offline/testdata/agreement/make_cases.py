#!/usr/bin/env python3
"""Writes the input files of the golden cases in this directory (see
../golden_cases.py)."""
import json, os, sys
BASE=os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode=True # no __pycache__ in testdata
sys.path.insert(0, os.path.dirname(BASE))
from golden_cases import write_case, J
def case(name, files, args=None, err=None, divergent=False):
    write_case(BASE, name, files.items(), args=args, err=err, divergent=divergent)
def P(qid, s, a, **kw):
    o={"qid":qid,"scholar":{"label":s,"reason":"r"},"auditor":{"label":a,"reason":"r"}}
    o.update(kw); return o

# 1. seed example + every arbitration path + truthiness quirks
rows=[
 P("A0001","VALID","VALID",answer_json={"claim":"X rejects null keys.","citations":["p1#2"],"constraints_echo":["X rejects null keys."]},retrieved_ids=["p1#1","p1#2","p2#1"],flags={"provenance_violation":False,"constraints_mismatch":False}),
 P("A0002","VALID","REJECT",flags={"provenance_violation":True}),
 P("A0003","REJECT","VALID",flags={"constraints_mismatch":"yes"}),
 P("A0004","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":"0"}),
 P("A0005","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":"","constraints_mismatch":0}),
 P("A0006","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":[],"constraints_mismatch":{}}),
 P("A0007","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":[0]}),
 P("A0008","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":{"a":0}}),
 P("A0009","NOT_IN_CONTEXT","VALID",flags={"provenance_violation":None,"constraints_mismatch":False}),
 P("A0010","NOT_IN_CONTEXT","VALID",answer_json={"claim":"c","citations":["p9"]},retrieved_ids=["p1"]),
 P("A0011","NOT_IN_CONTEXT","VALID",answer_json={"claim":"c","citations":["p1","p1"]},retrieved_ids=["p1","p2"]),
 P("A0012","VALID","NOT_IN_CONTEXT",answer_json={"citations":[]},retrieved_ids=None),
 P("A0013","REJECT","VALID",answer_json=None,retrieved_ids=[]),
 P("A0014","ABSTAIN","VALID",answer_json={},flags={}),
 P("A0015","VALID","ABSTAIN",answer_json={"citations":None}),
 P("A0016","valid","VALID"),
 P("A0017","maybe","maybe"),
 P("A0018","REJECT","REJECT"),
 P("A0019","ABSTAIN","ABSTAIN"),
 P("A0020","VALID","VALID",answer_json={"citations":["zz"]},retrieved_ids=[]),
 P("A0021","NOT_IN_CONTEXT","NOT_IN_CONTEXT"),
 P("é-ü-中-😀","VALID","REJECT"),
 P("A0023","NOT_IN_CONTEXT","VALID",answer_json={"citations":["p\u00e9"]},retrieved_ids=["pe\u0301"]),
]
lines=[J(r) for r in rows]
# raw-number truthiness quirks, written by hand
lines.append('{"qid":"N1","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":1e-400}}')
lines.append('{"qid":"N2","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":1e400}}')
lines.append('{"qid":"N3","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":-0,"constraints_mismatch":-0.0e5}}')
lines.append('{"qid":"N4","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"constraints_mismatch":0.0000000000000000000000000000001}}')
lines.append('{"qid":"N5","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"constraints_mismatch":' + '0'*1 + '}}')
lines.append('{"qid":"N6","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"constraints_mismatch":"\\u0000"}}')
lines.append('{"qid":"N7","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"Provenance_Violation":true}}')
lines.append('{"qid":"N8","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":false},"x":' + '['*990 + ']'*990 + '}')
lines.append('{"qid":"N9","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":' + '1'*4300 + '}}')
lines.append('{"qid":"N10","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":' + '0'*1 + '.' + '0'*5000 + '1}}')
lines.append('{"qid":"N11","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"flags":null,"answer_json":"junk","retrieved_ids":7}')
lines.append('{"scholar":{"label":"REJECT"},"auditor":{"label":"REJECT"}}')
lines.append('{"qid":12,"scholar":{"label":"VALID"},"auditor":{"label":"VALID"}}')
lines.append('{"qid":"N13","scholar":{"label":"VALID\\tX"},"auditor":{"label":"VALID\\n"}}')
lines.append('{"qid":"N14","scholar":{"label":"NOT_IN_CONTEXT"},"auditor":{"label":"VALID"},"flags":{"provenance_violation":true},"answer_json":7,"retrieved_ids":"x"}')
# whitespace quirks around lines: \v, \x1c, \xa0, \u3000, \x85 are stripped by str.strip()
text = ''
seps=['\n','\r\n','\r','\n','\n']
for i,l in enumerate(lines):
    pre = ['', '\x0b', '\x1c\x1d', '\u00a0', '\u3000 \t'][i%5]
    post = ['', '\x0c', '\x1e\x1f', '\x85', '\u2028'][i%5]
    text += pre + l + post + seps[i%5]
    if i%7==3: text += '  \x0b\x1c\u3000\n'   # blank by str.strip()
    if i%11==5: text += '\r'
case('pairs_quirks', {'pairs.jsonl': text})

# 2. zero rows
case('pairs_zero_rows', {'pairs.jsonl': ' \n\x0b\n\r\n\u2028\n'})
case('pairs_empty_file', {'pairs.jsonl': ''})
# 3. all agree, all VALID: pe == 1 so kappa is 0.0
case('pairs_all_valid', {'pairs.jsonl': ''.join(J(P("Q%d"%i,"VALID","VALID"))+'\n' for i in range(5))})
# 4. perfect agreement over two labels: kappa 1.0, pass with default gates
case('pairs_perfect', {'pairs.jsonl': ''.join(J(P("Q%d"%i,l,l))+'\n' for i,l in enumerate(["VALID","REJECT","VALID","NOT_IN_CONTEXT"]*10))})
# 5. only labels outside LABELS: n=0 but disagreements counted, TSV written
case('pairs_invalid_labels', {'pairs.jsonl': J(P("a","Valid","VALID "))+'\n'+J(P("b","","reject"))+'\n'+J(P("c","x","x"))+'\n'})
# 6. gates from the command line, including nan and -0.0 and inf
case('pairs_gates', {'pairs.jsonl': ''.join(J(P("Q%d"%i,l,m))+'\n' for i,(l,m) in enumerate([("VALID","VALID"),("ABSTAIN","ABSTAIN"),("REJECT","VALID"),("VALID","VALID"),("NOT_IN_CONTEXT","NOT_IN_CONTEXT")]))},
     args=['--pa_gate=0.5','--kappa_gate=-0.0','--abstain_gate=inf'])
case('pairs_gates_nan', {'pairs.jsonl': J(P("Q","VALID","VALID"))+'\n'}, args=['--pa_gate=nan','--kappa_gate=1e-7','--abstain_gate=1e16'])
# 7. no disagreement leaves an old TSV alone
case('pairs_old_tsv_kept', {'pairs.jsonl': J(P("Q","VALID","VALID"))+'\n', 'old.tsv': 'qid\tscholar\tauditor\tfinal\twhy\nOLD\tVALID\tREJECT\tREJECT\tauditor_veto\n'})
case('pairs_old_tsv_replaced', {'pairs.jsonl': J(P("Q","VALID","REJECT"))+'\n', 'old.tsv': 'stale content that is longer than the new file, to catch a missing truncate\n'*5})

# join mode
sch = [
 {"qid":"b","label":"VALID","reason":"x"},
 {"qid":"a","label":"REJECT"},
 {"qid":"Z","label":"VALID"},
 {"qid":"é","label":"NOT_IN_CONTEXT"},
 {"qid":"中","label":"ABSTAIN"},
 {"qid":"😀","label":"VALID"},
 {"qid":"\uff5e","label":"VALID"},
 {"qid":"only-scholar"},
 {"qid":"a","label":"VALID","reason":None},
 {"qid":"dup","label":5},
 {"qid":"dup","label":"VALID"},
 {"qid":"lazy","label":[1]},
]
aud = [
 {"qid":"a","label":"VALID"},
 {"qid":"b","label":"REJECT"},
 {"qid":"Z","label":"VALID"},
 {"qid":"é","label":"VALID"},
 {"qid":"中","label":"VALID"},
 {"qid":"😀","label":"NOT_IN_CONTEXT"},
 {"qid":"\uff5e","label":"REJECT"},
 {"qid":"only-auditor","label":"VALID"},
 {"qid":"dup","label":"VALID"},
 {"qid":"b","label":"ABSTAIN"},
]
case('join_basic', {'scholar.jsonl': '\r\n'.join(J(r) for r in sch)+'\r\n', 'auditor.jsonl': '\x0b\n'.join(J(r) for r in aud)})
case('join_disjoint', {'scholar.jsonl': J({"qid":"a","label":"VALID"})+'\n', 'auditor.jsonl': J({"qid":"b","label":"REJECT"})+'\n'})
case('join_pairs_wins', {'pairs.jsonl': J(P("p","VALID","VALID"))+'\n', 'scholar.jsonl': 'not json\n', 'auditor.jsonl': 'not json\n'})

# errors Python also crashes on
E = lambda name, content, err, fn='pairs.jsonl', extra=None: case(name, dict({fn: content}, **(extra or {})), err=err)
E('err_label_number_disagree', J(P("a",1,"VALID"))+'\n', 'pairs.jsonl:1: field "scholar.label": want a string, got a number')
E('err_label_list', J(P("a",["VALID"],"VALID"))+'\n', 'pairs.jsonl:1: field "scholar.label": want a string, got an array')
E('err_missing_auditor', J({"qid":"a","scholar":{"label":"VALID"}})+'\n', 'pairs.jsonl:1: field "auditor": missing')
E('err_missing_label', J({"qid":"a","scholar":{"label":"VALID"},"auditor":{"Label":"VALID"}})+'\n', 'pairs.jsonl:1: field "auditor.label": missing')
E('err_scholar_string', J({"qid":"a","scholar":"VALID","auditor":{"label":"VALID"}})+'\n', 'pairs.jsonl:1: field "scholar": want an object, got a string')
E('err_flags_null', J(P("ok","VALID","VALID"))+'\n'+J(P("a","VALID","REJECT",flags=None))+'\n', 'pairs.jsonl:2: field "flags": want an object, got null')
E('err_flags_list', J(P("a","VALID","REJECT",flags=[True]))+'\n', 'pairs.jsonl:1: field "flags": want an object, got an array')
E('err_answer_json_string', J(P("a","VALID","REJECT",answer_json="x"))+'\n', 'pairs.jsonl:1: field "answer_json": want an object or null, got a string')
E('err_citations_number', J(P("a","VALID","REJECT",answer_json={"citations":5}))+'\n', 'pairs.jsonl:1: field "answer_json.citations": want an array of strings or null, got a number')
E('err_citations_nested', J(P("a","VALID","REJECT",answer_json={"citations":[["p1"]]}))+'\n', 'pairs.jsonl:1: field "answer_json.citations": item 0: want a string, got an array')
E('err_retrieved_number', J(P("a","VALID","REJECT"))[:-1]+',"retrieved_ids":3}\n', 'pairs.jsonl:1: field "retrieved_ids": want an array of strings or null, got a number')
E('err_qid_missing_disagree', J({"scholar":{"label":"VALID"},"auditor":{"label":"REJECT"}})+'\n', 'pairs.jsonl:1: field "qid": missing')
E('err_qid_number_disagree', J({"qid":7,"scholar":{"label":"VALID"},"auditor":{"label":"REJECT"}})+'\n', 'pairs.jsonl:1: field "qid": want a string, got a number')
E('err_invalid_json', J(P("a","VALID","VALID"))+'\n{"qid": "b",}\n', 'pairs.jsonl:2: invalid JSON')
E('err_top_level_array', '[1, 2]\n', 'pairs.jsonl:1: want a JSON object, got an array')
E('err_top_level_null', 'null\n', 'pairs.jsonl:1: want a JSON object, got null')
E('err_invalid_utf8', J(P("a","VALID","VALID"))+'\n'+'{"qid":"\xff"}\n'.encode('latin1').decode('utf8','surrogateescape'), 'pairs.jsonl:2: invalid UTF-8')
E('err_invalid_utf8_blank_line', J(P("a","VALID","VALID"))+'\n \udcff \n'+J(P("b","VALID","VALID"))+'\n', 'pairs.jsonl:2: invalid UTF-8')
E('err_bom', '\ufeff'+J(P("a","VALID","VALID"))+'\n', 'pairs.jsonl:1: invalid JSON')
E('err_too_deep', '{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"x":' + '['*992 + ']'*992 + '}\n', 'pairs.jsonl:1: nested deeper than 992 levels')
E('err_long_int', '{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"x":-' + '9'*4301 + '}\n', 'pairs.jsonl:1: integer with 4301 digits')
E('err_join_label_missing', J({"qid":"a"})+'\n', 'scholar.jsonl:1: field "label": missing', fn='scholar.jsonl', extra={'auditor.jsonl': J({"qid":"a","label":"VALID"})+'\n'})
E('err_join_qid_missing', J({"label":"VALID"})+'\n', 'auditor.jsonl:1: field "qid": missing', fn='auditor.jsonl', extra={'scholar.jsonl': ''})
E('err_join_label_null', J({"qid":"a","label":"VALID"})+'\n', 'auditor.jsonl:2: field "label": want a string, got null', fn='scholar.jsonl', extra={'auditor.jsonl': J({"qid":"a","label":"VALID"})+'\n'+J({"qid":"a","label":None})+'\n'})
E('err_join_row_string', '"a"\n', 'scholar.jsonl:1: want a JSON object, got a string', fn='scholar.jsonl', extra={'auditor.jsonl': ''})

# errors where Python does not crash: SPEC-invalid input refused by design
def D(name, content, err, fn='pairs.jsonl', extra=None):
    case(name, dict({fn: content}, **(extra or {})), err=err, divergent=True)
D('div_nan', '{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"x":NaN}\n', 'pairs.jsonl:1: invalid JSON')
D('div_infinity', '{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"x":-Infinity}\n', 'pairs.jsonl:1: invalid JSON')
D('div_duplicate_key', '{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"VALID"},"qid":"b"}\n', 'pairs.jsonl:1: invalid JSON: jsontext: duplicate object member name "qid"')
D('div_duplicate_nested', '{"qid":"a","scholar":{"label":"REJECT","label":"VALID"},"auditor":{"label":"VALID"}}\n', 'pairs.jsonl:1: invalid JSON: jsontext: duplicate object member name "label"')
D('div_lone_surrogate', '{"qid":"a","scholar":{"label":"VALID","reason":"\\ud800"},"auditor":{"label":"VALID"}}\n', 'pairs.jsonl:1: invalid JSON: jsontext: invalid surrogate pair')
D('div_label_number_agree', J(P("a",1,1))+'\n', 'pairs.jsonl:1: field "scholar.label": want a string, got a number')
D('div_label_null_agree', J(P("a",None,None))+'\n', 'pairs.jsonl:1: field "scholar.label": want a string, got null')
D('div_citations_string', J(P("a","VALID","REJECT",answer_json={"citations":"p1"},retrieved_ids=["p","1"]))+'\n', 'pairs.jsonl:1: field "answer_json.citations": want an array of strings or null, got a string')
D('div_citations_numbers', J(P("a","VALID","REJECT",answer_json={"citations":[1]},retrieved_ids=[1.0]))+'\n', 'pairs.jsonl:1: field "answer_json.citations": item 0: want a string, got a number')
D('div_answer_json_false', J(P("a","VALID","REJECT",answer_json=False))+'\n', 'pairs.jsonl:1: field "answer_json": want an object or null, got a boolean')
D('div_retrieved_string', J(P("a","VALID","REJECT",answer_json={"citations":["p"]},retrieved_ids="p"))+'\n', 'pairs.jsonl:1: field "retrieved_ids": want an array of strings or null, got a string')
D('div_join_qid_number', J({"qid":1,"label":"VALID"})+'\n', 'scholar.jsonl:1: field "qid": want a string, got a number', fn='scholar.jsonl', extra={'auditor.jsonl': J({"qid":1,"label":"VALID"})+'\n'})

# confusion matrix M (scholar label i, auditor label j) as numbered pairs
L=["VALID","NOT_IN_CONTEXT","REJECT","ABSTAIN"]
def matrix_rows(qid, M):
    rows=[]
    for i in range(4):
        for j in range(4):
            for _ in range(M[i][j]):
                rows.append(J(P(qid%len(rows), L[i], L[j])))
    return rows

# kappa slightly below zero: round() gives -0.0
rows=matrix_rows("K%04d", [[0, 13, 100, 300], [0, 5, 100, 0], [5, 8, 300, 13], [0, 3, 300, 13]])
random_order = sorted(rows, key=lambda s: s[::-1])
case('pairs_kappa_negative_zero', {'pairs.jsonl': '\n'.join(random_order)+'\n'})
# exact binary halves at the 5th decimal: round half to even
rows=[J(P("H00","VALID","VALID"))]+[J(P("H%02d"%i,"ABSTAIN","REJECT" if i%2 else "NOT_IN_CONTEXT")) for i in range(1,4)]+[J(P("H%02d"%i,"REJECT","VALID")) for i in range(4,32)]
case('pairs_round_half_even', {'pairs.jsonl': '\n'.join(rows)})

# gates equal to the unrounded values: pass depends on the last bit of
# every float operation
import math
def stats(M):
    K=4; n=sum(map(sum,M))
    po=sum(M[i][i] for i in range(K))/n
    rs=[sum(M[i]) for i in range(K)]
    cs=[sum(M[i][j] for i in range(K)) for j in range(K)]
    pe=sum((rs[i]/n)*(cs[i]/n) for i in range(K))
    return po, (po-pe)/(1-pe), rs[3]/n
for tag, M in (('b', [[37, 3, 1, 2], [4, 29, 2, 0], [1, 3, 41, 1], [0, 1, 2, 7]]),
               ('c', [[27, 3, 11, 4], [7, 17, 8, 12], [7, 8, 21, 11], [8, 4, 8, 11]])):
    po, kappa, ab = stats(M)
    body='\n'.join(matrix_rows("G%04d", M))+'\n'
    case('pairs_gate_exact_'+tag, {'pairs.jsonl': body}, args=['--pa_gate=%r'%po,'--kappa_gate=%r'%kappa,'--abstain_gate=%r'%ab])
    case('pairs_gate_above_'+tag, {'pairs.jsonl': body}, args=['--pa_gate=%r'%po,'--kappa_gate=%r'%math.nextafter(kappa, 1),'--abstain_gate=%r'%ab])
    case('pairs_gate_abstain_below_'+tag, {'pairs.jsonl': body}, args=['--pa_gate=%r'%po,'--kappa_gate=%r'%kappa,'--abstain_gate=%r'%math.nextafter(ab, 0)])
