from spanguard_processor._entry import main

main()
