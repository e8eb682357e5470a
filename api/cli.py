def main(): print('hi')
