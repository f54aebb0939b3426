import json,re,collections,itertools,math
def load(f):
    d=json.load(open(f)); t=collections.defaultdict(dict)
    for r in d['rows']:
        m=re.match(r'gemm (\d+)x(\d+)x(\d+) (\S+)',r['case'])
        if not m or 'span_us' not in r: continue
        M,N,K,who=m.groups(); who=who.replace('samebits[','').replace(']','')
        t[(int(N),int(K),int(M))][who]=r['span_us']
    return t
t=load('run3_unrolled/new/profile_kernels.json')
S=132
ents=[(128,256,'128x256'),(192,192,'192x192'),(256,160,'256x160'),(128,224,'128x224'),(128,192,'128x192'),(128,160,'128x160'),(128,128,'128x128'),(128,96,'128x96')]
def choose(M,N,f):
    best=None
    for (bm,bn,name),pm in zip(ents,f):
        tiles=math.ceil(M/bm)*math.ceil(N/bn); c=math.ceil(tiles/S)*bm*bn*pm
        if best is None or c<best[0]: best=(c,name)
    return best[1]
def score(f,verbose=False):
    tot=0; worst=9
    for (N,K,M),v in sorted(t.items()):
        if M<=256 and not (M>192 and math.ceil(M/128)*math.ceil(N/128)>=S): continue
        if 2*math.ceil(M/128)*math.ceil(N/128)<S: continue
        name=choose(M,N,f); r=v['cublas']/v[name]; best=min(v[e[2]] for e in ents)
        tot+=math.log(v[name]/best); worst=min(worst,r)
        if verbose: print(N,K,M,name,'%.2f'%r,'best %.2f'%(v['cublas']/best))
    return tot,worst
cur=[1000,1000,1000,1030,1080,1220,1320,1600]
print('cur',score(cur))
bestf=None
for f in itertools.product([1000],[1000,1030,1060,1100],[1030,1060,1100,1150],[1020,1040,1060],[1060,1080,1120,1150],[1150,1220,1300],[1250,1320,1400],[1400,1600,1900]):
    s=score(f)
    if bestf is None or s[0]<bestf[0][0]-1e-9: bestf=(s,f)
print(bestf); score(bestf[1],True)
