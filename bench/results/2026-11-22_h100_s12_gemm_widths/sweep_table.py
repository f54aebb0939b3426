import json,re,collections,sys
def load(f):
    d=json.load(open(f)); t=collections.defaultdict(dict); names={}
    for r in d['rows']:
        m=re.match(r'gemm (\d+)x(\d+)x(\d+) (\S+)',r['case'])
        if not m or 'span_us' not in r: continue
        M,N,K,who=m.groups()
        who=who.replace('samebits[','').replace(']','')
        t[(int(N),int(K),int(M))][who]=r['span_us']
        if who=='samebits': names[(int(N),int(K),int(M))]=r['kernels'][0]['name']
    return t,names
new,names=load(sys.argv[1]); old,_=load(sys.argv[2])
tiles=sys.argv[3].split(',')
print('N K M | cublas old new | old/cb new/cb | '+' '.join(tiles))
for k in sorted(new):
    v=new[k]; cb=v['cublas']; o=old.get(k,{}).get('samebits',float('nan'))
    nm=re.search(r'TileConfig<([^>]*)>',names.get(k,'')); 
    print(k, f"{cb:.1f} {o:.1f} {v['samebits']:.1f} | {cb/o:.2f} {cb/v['samebits']:.2f} |", ' '.join(f"{v.get(t,0):.1f}" for t in tiles), '|', nm.group(1) if nm else names.get(k,'')[:30])
