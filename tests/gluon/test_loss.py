"""gluon.loss against MXNet 1.9.1.

Every EXPECTED value (the per-sample loss, and the gradient of sum(loss) w.r.t. the first input) was produced with
MXNet 1.9.1 (`mxnet.gluon.loss`, CPU, float32) on exactly the inputs the CASES block builds: the block uses only
numpy, and a generator script ran it under MXNet and printed the literals below.
"""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
import mixnet.gluon.loss as gloss

# --- cases (numpy only; shared with the MXNet generator) -------------------------------------------------------


def _r(seed, *shape, lo=-2.0, hi=2.0):
    return np.random.RandomState(seed).uniform(lo, hi, shape).astype(np.float32)


def _ints(seed, high, *shape):
    return np.random.RandomState(seed).randint(0, high, shape).astype(np.float32)


def _signs(seed, *shape):
    return (np.random.RandomState(seed).randint(0, 2, shape) * 2 - 1).astype(np.float32)


def _log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).astype(np.float32)


def _probs(seed, *shape, axis=-1):
    return np.exp(_log_softmax(_r(seed, *shape), axis)).astype(np.float32)


def _ctc_labels():
    lab = np.array([[0, 1, 1, -1], [2, -1, -1, -1], [1, 0, 2, 1]], np.float32)
    return lab


# (id, class name, constructor kwargs, positional inputs: arrays or None)
CASES = [
    ("l2", "L2Loss", {}, [_r(1, 3, 4), _r(2, 3, 4)]),
    ("l2_weight_sw", "L2Loss", {"weight": 2.5}, [_r(1, 3, 4), _r(2, 3, 4), _r(3, 3, 1, lo=0, hi=2)]),
    ("l2_batch_axis1", "L2Loss", {"batch_axis": 1}, [_r(1, 3, 4, 2), _r(2, 3, 4, 2)]),
    ("l2_reshape_label", "L2Loss", {}, [_r(1, 4, 1), _r(2, 4)]),
    ("l1", "L1Loss", {}, [_r(4, 3, 4), _r(5, 3, 4)]),
    ("l1_weight_sw", "L1Loss", {"weight": 0.5}, [_r(4, 3, 4), _r(5, 3, 4), _r(6, 3, 4, lo=0, hi=2)]),
    ("sbce", "SigmoidBinaryCrossEntropyLoss", {}, [_r(7, 3, 4, lo=-4, hi=4), _ints(8, 2, 3, 4)]),
    ("sbce_pos_weight", "SigmoidBCELoss", {}, [_r(7, 3, 4, lo=-4, hi=4), _ints(8, 2, 3, 4), None,
                                               _r(9, 1, 4, lo=0.5, hi=3)]),
    ("sbce_from_sigmoid", "SigmoidBCELoss", {"from_sigmoid": True, "weight": 2.0},
     [_r(10, 3, 4, lo=0.05, hi=0.95), _ints(8, 2, 3, 4), _r(11, 3, 1, lo=0, hi=2)]),
    ("sbce_from_sigmoid_pw", "SigmoidBCELoss", {"from_sigmoid": True},
     [_r(10, 3, 4, lo=0.05, hi=0.95), _ints(8, 2, 3, 4), None, _r(9, 1, 4, lo=0.5, hi=3)]),
    ("sce", "SoftmaxCrossEntropyLoss", {}, [_r(12, 4, 5), _ints(13, 5, 4)]),
    ("sce_axis1", "SoftmaxCELoss", {"axis": 1}, [_r(12, 2, 3, 4), _ints(13, 3, 2, 4)]),
    ("sce_dense", "SoftmaxCELoss", {"sparse_label": False}, [_r(12, 4, 5), _probs(14, 4, 5)]),
    ("sce_from_logits_w", "SoftmaxCELoss", {"from_logits": True, "weight": 0.7},
     [_log_softmax(_r(12, 4, 5)), _ints(13, 5, 4), _r(15, 4, 1, lo=0, hi=2)]),
    ("sce_batch_axis1", "SoftmaxCELoss", {"batch_axis": 1}, [_r(12, 2, 3, 5), _ints(13, 5, 2, 3)]),
    ("kl", "KLDivLoss", {}, [_log_softmax(_r(16, 3, 4)), _probs(17, 3, 4)]),
    ("kl_not_logits_axis0", "KLDivLoss", {"from_logits": False, "axis": 0}, [_r(16, 3, 4), _probs(17, 3, 4, axis=0)]),
    ("ctc_ntc", "CTCLoss", {}, [_r(18, 3, 6, 4), _ctc_labels()]),
    ("ctc_tnc_tn", "CTCLoss", {"layout": "TNC", "label_layout": "TN"}, [_r(18, 6, 3, 4), _ctc_labels().T.copy()]),
    ("ctc_lengths", "CTCLoss", {"weight": 2.0},
     [_r(18, 3, 6, 4), np.array([[0, 1, 1, 2], [2, 0, 0, 0], [1, 0, 2, 1]], np.float32),
      np.array([5, 6, 4], np.float32), np.array([3, 1, 2], np.float32), _r(19, 3, lo=0, hi=2)]),
    ("huber", "HuberLoss", {}, [_r(20, 3, 4, lo=-3, hi=3), _r(21, 3, 4)]),
    ("huber_rho", "HuberLoss", {"rho": 0.5, "weight": 3.0}, [_r(20, 3, 4, lo=-3, hi=3), _r(21, 3, 4),
                                                             _r(22, 3, 1, lo=0, hi=2)]),
    ("hinge", "HingeLoss", {}, [_r(23, 3, 4), _signs(24, 3, 4)]),
    ("hinge_margin", "HingeLoss", {"margin": 2}, [_r(23, 3, 4), _signs(24, 3, 4)]),
    ("sq_hinge", "SquaredHingeLoss", {}, [_r(23, 3, 4), _signs(24, 3, 4)]),
    ("sq_hinge_margin_sw", "SquaredHingeLoss", {"margin": 0.5}, [_r(23, 3, 4), _signs(24, 3, 4),
                                                                 _r(25, 3, 4, lo=0, hi=1)]),
    ("logistic", "LogisticLoss", {}, [_r(26, 3, 4, lo=-5, hi=5), _signs(27, 3, 4)]),
    ("logistic_binary", "LogisticLoss", {"label_format": "binary"}, [_r(26, 3, 4, lo=-5, hi=5), _ints(27, 2, 3, 4)]),
    ("triplet", "TripletLoss", {}, [_r(28, 4, 3), _r(29, 4, 3), _r(30, 4, 3)]),
    ("triplet_margin", "TripletLoss", {"margin": 3.0, "weight": 0.5}, [_r(28, 4, 3), _r(29, 4, 3), _r(30, 4, 3)]),
    ("poisson", "PoissonNLLLoss", {}, [_r(31, 3, 4), _ints(32, 5, 3, 4)]),
    ("poisson_not_logits_sw", "PoissonNLLLoss", {"from_logits": False},
     [_r(31, 3, 4, lo=0.2, hi=3), _ints(32, 5, 3, 4), _r(33, 3, 1, lo=0, hi=2)]),
    ("poisson_full", "PoissonNLLLoss", {"compute_full": True}, [_r(31, 3, 4), _r(34, 3, 4, lo=0.5, hi=5)]),
    ("cosine", "CosineEmbeddingLoss", {}, [_r(35, 4, 3), _r(36, 4, 3), np.array([1, -1, 1, -1], np.float32)]),
    ("cosine_margin_sw", "CosineEmbeddingLoss", {"margin": 0.2, "weight": 2.0},
     [_r(35, 4, 3), _r(36, 4, 3), np.array([1, -1, -1, -1], np.float32), _r(37, 4, 1, lo=0, hi=2)]),
    ("sdml", "SDMLLoss", {}, [_r(38, 4, 3, lo=-1, hi=1), _r(39, 4, 3, lo=-1, hi=1)]),
    ("sdml_smoothing", "SDMLLoss", {"smoothing_parameter": 0.1}, [_r(38, 4, 3, lo=-1, hi=1),
                                                                  _r(39, 4, 3, lo=-1, hi=1)]),
]
# --- end cases -------------------------------------------------------------------------------------------------

# --- expected (generated with MXNet 1.9.1) ---------------------------------------------------------------------
EXPECTED = {
    'l2': (
        [1.604477, 0.4135222, 0.2970976],
        [-0.0189729, 0.6943983, -0.5495481, -0.1329898, -0.2736119, -0.2379962, -0.01838842, -0.2737103,
         0.0971128, 0.2719895, -0.2019393, 0.1560774]),
    'l2_weight_sw': (
        [4.418712, 1.464174, 0.4321355],
        [-0.05225116, 1.912366, -1.51345, -0.3662526, -0.9687883, -0.8426825, -0.0651086, -0.9691366,
         0.1412529, 0.3956151, -0.2937255, 0.2270183]),
    'l2_batch_axis1': (
        [1.014391, 1.196725, 1.562613, 0.6416518],
        [-0.0126486, 0.4629322, -0.3663654, -0.08865988, -0.1824079, -0.1586642, -0.01225895, -0.1824735,
         0.06474186, 0.1813263, -0.1346262, 0.1040516, 0.04658153, 0.2430262, -0.1047015, -0.07657843,
         -0.2911137, 0.04296866, -0.4707831, 0.07897067, 0.196999, 0.6019834, -0.07646543, 0.3971945]),
    'l2_reshape_label': (
        [0.002879766, 3.857512, 2.416025, 0.1414903],
        [-0.07589158, 2.777593, -2.198192, -0.5319593]),
    'l1': (
        [2.038297, 1.327526, 1.530285],
        [0.25, -0.25, 0.25, -0.25, 0.25, -0.25, 0.25, -0.25, -0.25, 0.25, 0.25, -0.25]),
    'l1_weight_sw': (
        [1.41014, 0.5839333, 0.8725389],
        [0.223215, -0.08299495, 0.2053073, -0.01042416, 0.02691417, -0.148763, 0.1324543, -0.1047019,
         -0.08385196, 0.1556299, 0.1095354, -0.1839705]),
    'sbce': (
        [1.721891, 1.258463, 0.6428376],
        [-0.241844, 0.225932, -0.1551871, -0.03583808, -0.005343804, 0.1440972, 0.1255602, -0.2421084,
         0.03389525, -0.1250587, 0.2018747, -0.02023]),
    'sbce_pos_weight': (
        [1.489077, 1.112988, 0.7702137],
        [-0.1271943, 0.225932, -0.2699376, -0.02990953, -0.002810496, 0.1440972, 0.1255602, -0.2020574,
         0.03389525, -0.2194389, 0.2018747, -0.01688343]),
    'sbce_from_sigmoid': (
        [0.2104212, 0.03027063, 1.605266],
        [-0.2422366, 0.193563, -0.2906247, -0.2490176, -0.03905544, 0.02604746, 0.02523538, -0.02651577,
         0.5806197, -3.576816, 1.390311, -0.5101222]),
    'sbce_from_sigmoid_pw': (
        [0.3317209, 0.2933478, 1.248027],
        [-0.1766808, 0.2684353, -0.7010639, -0.288212, -0.2636763, 0.3343663, 0.3239419, -0.2840705,
         0.3133616, -3.387273, 0.7503539, -0.2297699]),
    'sce': (
        [2.459425, 1.153217, 0.7161084, 1.77815],
        [0.05524191, 0.5755172, -0.9145159, 0.252151, 0.03160674, -0.6843803, 0.2936561, 0.00914526,
         0.3677294, 0.01385141, 0.03481539, 0.1263529, -0.5113498, 0.3388944, 0.01128849, -0.8310495,
         0.1911105, 0.1463807, 0.4536101, 0.03994759]),
    'sce_axis1': (
        [1.181643, 2.448858],
        [0.009477003, -0.1702157, 0.01679263, -0.1488164, 0.005422281, 0.1630596, 0.2149787, 0.01367631,
         -0.01489928, 0.007156101, -0.2317714, 0.1351401, 0.1474308, 0.197483, -0.2396284, 0.1742911,
         0.03071063, 0.04543215, 0.221976, -0.2087896, -0.1781414, -0.2429152, 0.01765243, 0.03449848]),
    'sce_dense': (
        [1.916527, 1.437352, 3.104288, 1.84487],
        [-0.06163252, 0.2458818, -0.4009189, 0.2367024, -0.02003191, -0.357034, 0.1799881, -0.04299584,
         0.2415613, -0.02151758, -0.4354726, 0.05291516, 0.327397, 0.319771, -0.2646091, 0.1431887,
         -0.2724905, 0.09669225, 0.2280763, -0.1954674]),
    'sce_from_logits_w': (
        [2.922646, 0.2888287, 0.05450204, 0.9000169],
        [0, 0, -1.188345, 0, 0, -0.2504543, 0, 0, 0, 0, 0, 0, -0.0761085, 0, 0, -0.5061538, 0, 0, 0, 0]),
    'sce_batch_axis1': (
        [2.118787, 1.992255, 1.011649],
        [0.02762096, 0.2877586, -0.4572579, 0.1260755, 0.01580337, -0.3421901, 0.1468281, 0.00457263,
         0.1838647, 0.006925707, 0.0174077, 0.06317647, -0.2556749, 0.1694472, 0.005644243, -0.4155248,
         0.09555526, 0.07319036, 0.226805, 0.0199738, 0.365299, 0.01864752, -0.4705317, 0.02731856,
         0.0592677, 0.1057127, 0.04745746, 0.1885924, 0.02294871, -0.3647103]),
    'kl': (
        [0.2032675, 0.3920169, 1.220502],
        [-0.2157456, -0.5543447, -0.1428111, -0.08709864, -0.3887586, -0.2305231, -0.2138127, -0.1669056,
         -0.0231232, -0.08275127, -0.8689778, -0.02514763]),
    'kl_not_logits_axis0': (
        [-0.0475779, 1.998981, 0.3101249],
        [0.18803, -0.1659466, 0.2273115, 0.1629286, -0.311426, -0.4787121, 0.240788, -0.3660463, 0.1233959,
         0.6446588, -0.4680995, 0.2031176]),
    'ctc_ntc': (
        [6.60977, 7.252989, 4.925241],
        [-0.7538669, 0.1331889, 0.5925058, 0.02817224, 0.1995332, -0.6817575, 0.1230389, 0.3591862,
         0.05821136, -0.09491484, 0.2747969, -0.2380934, 0.7618904, -0.2581393, 0.06264705, -0.5663975,
         0.2474954, -0.3421082, 0.03509465, 0.05951853, 0.2344876, -0.1470981, 0.3365081, -0.4238977,
         0.03242916, 0.6566781, -0.06458333, -0.6245238, 0.06760497, 0.7340218, -0.4083957, -0.3932306,
         0.07957757, 0.6523734, -0.6093832, -0.1225674, 0.3578307, 0.2657389, -0.7197295, 0.09615983,
         0.03884492, 0.5965714, -0.6586791, 0.02326293, 0.0174296, 0.05015069, -0.05158663, -0.01599351,
         0.04777111, -0.01170384, 0.1230843, -0.1591516, 0.02025243, -0.5621483, 0.5342264, 0.007669671,
         -0.4220933, 0.222538, 0.157287, 0.04226841, -0.09187298, 0.2342784, -0.2007792, 0.05837378,
         0.2395664, 0.3048515, -0.6058688, 0.061451, 0.5867129, -0.7779349, 0.1879868, 0.003235217]),
    'ctc_tnc_tn': (
        [3.988861, 6.83231, 7.230058],
        [-0.6520234, 0.1331889, 0.5925058, -0.07367042, 0.2590512, 0.1721969, 0.1033202, -0.5345679,
         0.06040244, -0.3944733, 0.2747969, 0.05927467, -0.06291854, -0.01014354, 0.06264705, 0.01041494,
         0.2474954, 0.497709, -0.05550208, -0.6897025, -0.06223257, -0.4156622, 0.3365081, 0.1413868,
         0.01384854, -0.1686965, 0.09906481, 0.05578348, 0.06760497, 0.7340218, -0.4302476, -0.3713788,
         -0.5429131, 0.5075329, 0.02839115, 0.006988682, 0.3578307, -0.3449716, 0.1734429, -0.1863015,
         0.03884492, 0.5965714, -0.6202552, -0.01516037, -0.1328015, 0.04404759, 0.06234699, 0.02640692,
         0.04777111, -0.01509791, 0.1230843, -0.1557571, 0.0244372, 0.4306295, -0.4578671, 0.002800749,
         0.4674617, -0.2000851, -0.237185, -0.03019143, 0.1497728, -0.7176258, 0.07029188, 0.4975612,
         0.2395664, 0.4829616, -0.4747176, -0.2478103, 0.5867129, -0.7547913, 0.1879868, -0.01990877]),
    'ctc_lengths': (
        [2.281156, 22.08534, 1.965068],
        [-0.2953293, 0.05196157, 0.2311569, 0.01221094, 0.08581634, -0.2849608, 0.04800169, 0.1511432,
         0.02356507, -0.03733903, 0.1072077, -0.09343369, 0.2972396, -0.09375441, 0.02444077, -0.2279259,
         0.09655647, -0.162044, 0.01369163, 0.05179602, 0, 0, 0, 0, 0.09874675, 1.999584, -0.1966562,
         -1.901674, 0.2058571, 2.235096, -1.243564, -1.197387, 0.2423136, 1.986476, -1.855571, -0.3732177,
         1.089594, 0.8091748, -2.191576, 0.2928066, 0.1182827, 1.816559, -2.005677, 0.07083558, 0.05307311,
         0.1527088, -0.1570812, -0.04870021, 0.04718601, -0.009558255, 0.1215767, -0.1592047, 0.02202574,
         -0.5565276, 0.5276831, 0.006818592, -0.3787319, 0.1859499, 0.1572692, 0.03551269, -0.1802845,
         0.2318679, 0.06943094, -0.1210143, 0, 0, 0, 0, 0, 0, 0, 0]),
    'huber': (
        [2.209402, 0.926518, 0.7405562],
        [0.25, 0.25, 0.25, 0.25, -0.25, 0.25, 0.01574953, -0.1361439, 0.25, -0.25, 0.08890364, -0.03949559]),
    'huber_rho': (
        [3.076129, 3.146112, 2.231755],
        [0.3126908, 0.3126908, 0.3126908, 0.3126908, -0.7225215, 0.7225215, 0.09103499, -0.7225215, 0.630807,
         -0.630807, 0.4486483, -0.1993128]),
    'hinge': (
        [1.250362, 1.318036, 0.4700176],
        [0.25, -0, 0.25, -0.25, -0.25, -0.25, -0.25, 0.25, -0.25, -0.25, 0, -0]),
    'hinge_margin': (
        [2.053399, 2.318036, 1.08845],
        [0.25, -0.25, 0.25, -0.25, -0.25, -0.25, -0.25, 0.25, -0.25, -0.25, 0.25, -0.25]),
    'sq_hinge': (
        [2.223202, 2.575509, 0.5268058],
        [0.5345958, -0, 1.03092, -0.9352083, -1.057909, -0.1275558, -1.165722, 0.2848849, -0.2638953,
         -0.6761398, 0, -0]),
    'sq_hinge_margin_sw': (
        [0.3278086, 0.8432426, 0.06676741],
        [0.2476337, -0, 0.2177508, -0.1273879, -0.3321316, -0, -0.6272407, 0.01526603, -0.007728975,
         -0.1564275, 0, -0]),
    'logistic': (
        [1.413811, 1.711854, 1.833176],
        [-0.2180527, 0.1370818, 0.2340037, -0.01313503, 0.2440012, 0.01056449, -0.2273215, 0.1226204,
         -0.02096122, -0.2387008, -0.2402325, 0.1489661]),
    'logistic_binary': (
        [1.413811, 1.711854, 1.833176],
        [-0.2180527, 0.1370818, 0.2340037, -0.01313503, 0.2440012, 0.01056449, -0.2273215, 0.1226204,
         -0.02096122, -0.2387008, -0.2402325, 0.1489661]),
    'triplet': (
        [0, 3.048703, 0, 0],
        [-0, 0, 0, -4.796692, 4.07911, -1.56508, 0, 0, 0, 0, -0, 0]),
    'triplet_margin': (
        [0, 2.524352, 0, 0],
        [-0, 0, 0, -2.398346, 2.039555, -0.7825401, 0, 0, 0, 0, -0, 0]),
    'poisson': (
        [2.094736],
        [-0.2145875, 0.1874171, 0.2456973, 0.3342498, -0.3074005, -0.06383134, 0.1768121, -0.1518255,
         -0.06808943, -0.2341483, -0.2338738, -0.03127205]),
    'poisson_not_logits_sw': (
        [0.7590153],
        [-0.08271869, -0.01605334, 0.04141835, -0.0005138628, -0.3081918, -0.05356091, -0.007013239,
         -0.307453, -0.09818025, -0.09061377, -0.3877871, 0.01459065]),
    'poisson_full': (
        [2.978529],
        [-0.02071483, 0.186546, 0.1692667, 0.3052484, -0.02094289, -0.3732241, 0.22518, -0.121733,
         -0.09765975, -0.09804085, -0.03057316, -0.2327827]),
    'cosine': (
        [1.875686, 0.8548368, 0.711476, 0],
        [-0.2494125, 0.2315573, -0.126312, -0.1735182, 0.0604154, 0.1486845, 0.6907377, 0.2973376,
         -0.1150852, 0, 0, 0]),
    'cosine_margin_sw': (
        [7.086318, 1.215634, 0.06826797, 0],
        [-0.942277, 0.8748202, -0.477205, -0.322118, 0.1121547, 0.2760168, -0.5326831, -0.2293008,
         0.08875138, 0, 0, 0]),
    'sdml': (
        [0.1139285, 0.9173667, 0.5502185, 3.11403],
        [-0.02873902, -0.1759024, -0.1128902, 1.082266, 0.1486376, 0.5613653, -0.7795643, 0.07594581,
         -0.3195182, -1.928281, -0.7525235, -1.08796]),
    'sdml_smoothing': (
        [0.4266321, 1.597704, 0.7203283, 4.372487],
        [-0.06315112, -0.3105014, -0.2084999, 1.501015, 0.2229953, 0.780302, -0.7254636, 0.2895635,
         -0.2149263, -2.366719, -0.9059002, -1.315879]),
}
# --- end expected ----------------------------------------------------------------------------------------------


def _run(name, kwargs, inputs):
    block = getattr(gloss, name)(**kwargs)
    args = [None if a is None else mx.nd.array(a) for a in inputs]
    args[0].attach_grad()
    with autograd.record():
        out = block(*args)
    out.backward()
    return out.asnumpy(), args[0].grad.asnumpy()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_mxnet(case):
    cid, name, kwargs, inputs = case
    want_out, want_grad = EXPECTED[cid]
    out, grad = _run(name, kwargs, inputs)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.array(want_out, np.float32).reshape(out.shape), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grad, np.array(want_grad, np.float32).reshape(grad.shape), rtol=1e-3, atol=1e-5)


def test_checked_values():
    p = mx.nd.array([[1, 2], [3, 5]])
    out = gloss.L2Loss()(pred=p, label=mx.nd.array([[0, 0], [1, 1]]))
    np.testing.assert_allclose(out.asnumpy(), [1.25, 5.0], rtol=1e-6)
    out = gloss.SoftmaxCELoss()(pred=p, label=mx.nd.array([1, 0]))
    np.testing.assert_allclose(out.asnumpy(), [0.31326, 2.12693], rtol=1e-5)


def test_names_and_repr():
    l2 = gloss.L2Loss()
    assert l2.name.startswith("l2loss") and l2.prefix == l2.name + "_"
    assert gloss.SoftmaxCELoss().name.startswith("softmaxcrossentropyloss")
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss
    assert repr(gloss.L2Loss()) == "L2Loss(batch_axis=0, w=1.0)"
    assert repr(gloss.HuberLoss()) == "HuberLoss(batch_axis=0, w=None)"
    assert repr(gloss.CTCLoss(label_layout="TN")) == "CTCLoss(batch_axis=1, w=None)"
    sdml = gloss.SDMLLoss()
    assert list(sdml._children) == ["kl_loss"] and not list(sdml.collect_params())
    assert isinstance(l2, mx.gluon.HybridBlock)


def test_bad_arguments():
    with pytest.raises(ValueError, match="label_format"):
        gloss.LogisticLoss(label_format="x")
    with pytest.raises(mx.base.MXNetError):
        gloss.CTCLoss(layout="NCT")
    with pytest.raises(mx.base.MXNetError):
        gloss.L1Loss(weight=mx.nd.ones((1,)))(mx.nd.ones((2, 2)), mx.nd.ones((2, 2)))


def test_sigmoid_bce_is_stable_for_large_logits():
    pred = mx.nd.array([[-200.0, 200.0, 0.0]])
    out = gloss.SigmoidBCELoss()(pred, mx.nd.array([[1.0, 0.0, 1.0]]))
    np.testing.assert_allclose(out.asnumpy(), [(200 + 200 + np.log(2)) / 3], rtol=1e-6)


def test_hybridized_equals_eager_and_keywords():
    pred, label = mx.nd.array(_r(1, 3, 4)), mx.nd.array(_ints(8, 2, 3, 4))
    loss = gloss.SigmoidBCELoss()
    eager = loss(pred, label).asnumpy()
    loss.hybridize()
    np.testing.assert_allclose(loss(pred=pred, label=label).asnumpy(), eager, rtol=1e-6)
    assert len(loss._cached_graphs) == 1, "a keyword call runs hybridized too"
    sw = mx.nd.array([[1.0], [0.0], [2.0]])
    np.testing.assert_allclose(loss(pred, label, sample_weight=sw).asnumpy(), eager * [1, 0, 2], rtol=1e-6)


def test_poisson_full_with_zero_target_is_finite():
    # MXNet 1.9.1 returns NaN here (0 * log(0) under a mask); the Stirling term is 0 for targets <= 1.
    pred = mx.nd.array([[0.5, -0.5]])
    out = gloss.PoissonNLLLoss(compute_full=True)(pred, mx.nd.array([[0.0, 1.0]]))
    want = np.mean([np.exp(0.5), np.exp(-0.5) + 0.5])
    np.testing.assert_allclose(out.asnumpy(), [want], rtol=1e-6)


def test_l2_weight_none_means_unweighted():
    out = gloss.L2Loss(weight=None)(mx.nd.ones((2, 3)), mx.nd.zeros((2, 3)))
    np.testing.assert_allclose(out.asnumpy(), [0.5, 0.5])


def test_second_order_gradient_of_softmax_ce():
    x = mx.nd.array(_r(12, 2, 3))
    x.attach_grad()
    label = mx.nd.array([0, 2])
    with autograd.record():
        loss = gloss.SoftmaxCELoss()(x, label)
        (g,) = autograd.grad(loss.sum(), [x], create_graph=True)
        z = (g * g).sum()
    z.backward()
    # finite differences of sum(g^2) in float64 with numpy
    def gsq(v):
        p = np.exp(_log_softmax(v.astype(np.float64)).astype(np.float64))
        onehot = np.eye(3)[[0, 2]]
        return ((p - onehot) ** 2).sum()
    base = x.asnumpy().astype(np.float64)
    num = np.zeros_like(base)
    for idx in np.ndindex(*base.shape):
        d = np.zeros_like(base)
        d[idx] = 1e-4
        num[idx] = (gsq(base + d) - gsq(base - d)) / 2e-4
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=2e-2, atol=2e-3)


# --- the CTCLoss operator (mixnet/ops/ctc.py) --------------------------------------------------------------------
def test_ctc_op_matches_brute_force_and_mxnet_conventions():
    from mixnet.ops.ctc import _ref_ctc_bruteforce
    x = _r(40, 4, 3, 3)
    lab = np.array([[1, 2], [1, 0], [2, 2]], np.float32)           # 'first': blank 0, padding 0
    out = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab))
    np.testing.assert_allclose(out.asnumpy(), _ref_ctc_bruteforce(x, lab), rtol=1e-5)
    lab = np.array([[0, 1], [1, -1], [-1, -1]], np.float32)         # 'last': blank C-1, padding -1
    out = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab), blank_label="last")
    np.testing.assert_allclose(out.asnumpy(), _ref_ctc_bruteforce(x, lab, blank_label="last"), rtol=1e-5)
    # an empty label: -sum_t log p(blank)
    want = -_log_softmax(x[:, 2, :])[:, 2].sum()
    np.testing.assert_allclose(out.asnumpy()[2], want, rtol=1e-5)


def test_ctc_op_impossible_alignment_and_bad_lengths():
    x = mx.nd.array(_r(41, 3, 1, 3))
    x.attach_grad()
    with autograd.record():
        out = mx.nd.CTCLoss(x, mx.nd.array([[1, 1, 1]]))          # needs 5 steps, has 3: MXNet returns 0
    out.backward()
    assert out.asnumpy().tolist() == [0.0] and not x.grad.asnumpy().any()
    with pytest.raises(mx.base.MXNetError):
        mx.nd.CTCLoss(x, mx.nd.array([[1, 2]]), mx.nd.array([4]), use_data_lengths=True)


def test_ctc_op_gradient_scales_with_head_gradient():
    x = mx.nd.array(_r(42, 5, 2, 4))
    lab = mx.nd.array([[1, 2], [3, 0]])
    x.attach_grad()
    with autograd.record():
        out = mx.nd.ctc_loss(x, lab)
    out.backward()
    g1 = x.grad.asnumpy().copy()
    with autograd.record():
        out = (mx.nd.ctc_loss(x, lab) * mx.nd.array([2.0, 3.0])).sum()
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), g1 * np.array([2.0, 3.0])[None, :, None], rtol=1e-5)
