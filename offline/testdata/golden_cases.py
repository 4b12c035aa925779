"""What the make_cases.py scripts of agreement/ and triage/ share: each
writes the input files of the golden cases in its directory.

Inputs hold bytes that are hard to type (\v, \x1c, U+2028, invalid UTF-8),
hence scripts. After running one, regenerate the expected outputs from the
reference with:  go test ./offline -run Golden -update
A case can also have want.err (the error the port must return) and
divergent (the reference accepts the input, the port refuses it on purpose).
"""
import json, os, shutil

def write_case(base, name, files, args=None, err=None, divergent=False):
    """Writes case name under base afresh: files is (file name, content)
    pairs, str content encoded as UTF-8 with lone surrogates as the bytes
    they stand for; args one line each."""
    d=os.path.join(base,name)
    if os.path.exists(d): shutil.rmtree(d)
    os.makedirs(d)
    for fn,content in files:
        if isinstance(content,str): content=content.encode('utf8','surrogateescape')
        open(os.path.join(d,fn),'wb').write(content)
    if args: open(os.path.join(d,'args'),'w').write('\n'.join(args)+'\n')
    if err: open(os.path.join(d,'want.err'),'w').write(err+'\n')
    if divergent: open(os.path.join(d,'divergent'),'w').write('The reference accepts this input; it is SPEC-invalid and the port refuses it on purpose.\n')

def J(o): return json.dumps(o, ensure_ascii=False)
